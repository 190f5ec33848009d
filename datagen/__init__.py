"""The generators of the demo's test sets (site_config/data/demo-*): organizer's tools.

They hold what the test sets are made of (the sentences synthesized into the ASR audio,
the spoken requests of the keyword-spotting set, the truth of the vision sets), so they
live apart from examples/, the directory the demo's sealed systems run in and can read.
Run from the repository root: ``python -m datagen.make_demo_asr`` and so on.
"""
