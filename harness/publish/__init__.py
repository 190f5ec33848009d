"""Results for the world and for each participant (docs/publishing.md).

    published, key_file = publish(model, Path("results"), IntervalSettings())
    package(model, "team-a", Path("team-a"), IntervalSettings())

``publish`` writes every table and figure with systems as "System k" and the key
(name -> number) beside the directory; ``package`` writes one participant's outputs,
verdicts, times and scores with the same numbering, and the references after the run's
embargo.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.publish.anonymize import DEFAULT_SEED, Key, KeyEntry, make_key
    from harness.publish.package import PackageResult, package
    from harness.publish.write import publish

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("DEFAULT_SEED", "Key", "KeyEntry", "make_key"), ".anonymize"),
        **dict.fromkeys(("PackageResult", "package"), ".package"),
        "publish": ".write",
    },
)

__all__ = ["DEFAULT_SEED", "Key", "KeyEntry", "PackageResult", "make_key", "package", "publish"]
