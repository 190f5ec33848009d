"""The judging panel: human judgement of a run's outputs at the venue (docs/judging.md).

plan (seeded, balanced, blinded plans) -> store (SQLite in the run directory) ->
app (Starlette: JSON API and pages) -> results and scores (through scoring/).
Nothing here is imported by the rest of the harness except inside `onsite judge`,
`onsite score ... --run` and `onsite report`, so starlette and uvicorn load only there;
and `qrels` (SQLite only), which the run's read model asks for an ``ir`` task whose
``qrels = "judging"``.
"""
