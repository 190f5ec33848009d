"""What a judge is shown for a trial, and the JSON Schema its answer must meet.

A trial is shown without any system or test-set name: audio by anonymous media
URLs, texts as they are, translations as numbered outputs in a shuffled order.
`validate` checks an answer against the small JSON Schema subset used here
(object, integer, number, string, boolean, array; enum, minimum, maximum,
multipleOf, maxLength, minItems, maxItems, required, additionalProperties)
and says what is wrong in words a judging app can show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.judge.material import Material
from harness.judge.plan import Trial

# Survey Tables 18 and 19 (HTRDP 2005 MT human assessment).
ADEQUACY = ("None", "Almost no information", "Little information", "More information",
            "Most information", "All information")  # fmt: skip
FLUENCY = ("Incomprehensible", "Difficult to comprehend", "Disfluent", "Non-native", "Good",
           "Flawless")  # fmt: skip
# Survey Table 51 (pair comparison scale), +2 first.
PAIR_SCALE = ((2, "A is better than B"), (1, "A is slightly better than B"),
              (0, "A is the same as B"), (-1, "A is slightly worse than B"),
              (-2, "A is worse than B"))  # fmt: skip
MOS_SCALE = ((5, "Excellent"), (4, "Good"), (3, "Fair"), (2, "Poor"), (1, "Bad"))
# Survey Table 58, shortened.
SUMMARY_CRITERIA = (
    "0: not fluent, does not reflect the topic; 1: not fluent, partly reflects the topic, "
    "many key points missed; 2: incoherent, but helps to understand the article; "
    "3: fairly fluent, most key points summarized; 4: fluent and coherent, only a few key "
    "points omitted; 5: fluent and coherent, no key point omitted, the main idea clear"
)
# Graded relevance as TREC's ad hoc assessors gave it (and trec_eval reads: >= 1 relevant).
RELEVANCE_SCALE = ((2, "highly relevant"), (1, "relevant"), (0, "not relevant"))
_MAX_BLANK_CHARS = 200
# The largest whole number an answer may hold: every integer up to it is exact as a JSON
# number in the judge's browser, and as a float in the checks below.
MAX_ANSWER_INT = 1 << 53
_SHOWN = 60  # characters of a refused value quoted in the reason


@dataclass(frozen=True)
class Presentation:
    """A trial as served: the texts, the audio files (in play order) and the answer schema."""

    text: dict[str, Any]
    audio: tuple[Path, ...]
    schema: dict[str, Any]
    play_once: bool


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _decimal(low: float, high: float, titles: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "number", "minimum": low, "maximum": high, "multipleOf": 0.1}
    if titles:
        out["description"] = "; ".join(f"{n}: {t}" for n, t in enumerate(titles))
    return out


def present(test: str, trial: Trial, material: Material) -> Presentation:
    """What the judge of ``trial`` sees and answers."""
    item = trial.item
    audio = tuple(
        path
        for s in trial.systems
        if (out := material.outputs.get((s, item))) is not None and (path := out.audio)
    )
    if test == "sus":
        n = len(material.sus[item].blanks)
        blanks = {"type": "string", "maxLength": _MAX_BLANK_CHARS}
        schema = _object(
            {"blanks": {"type": "array", "items": blanks, "minItems": n, "maxItems": n}}
        )
        return Presentation({"parts": material.sus[item].parts()}, audio, schema, False)
    if test == "pair":
        score: dict[str, Any] = {
            "type": "integer",
            "enum": [s for s, _ in PAIR_SCALE],
            "description": "; ".join(f"{s:+d}: {t}" for s, t in PAIR_SCALE),
        }
        return Presentation({"sides": ["A", "B"]}, audio, _object({"score": score}), True)
    if test == "mos":
        score = {
            "type": "integer",
            "minimum": 1,
            "maximum": 5,
            "description": "; ".join(f"{s}: {t}" for s, t in MOS_SCALE),
        }
        return Presentation({}, audio, _object({"score": score}), False)
    if test == "mt-adequacy-fluency":
        outputs = [str(material.outputs[(s, item)].text) for s in trial.systems]
        props: dict[str, Any] = {}
        for n in range(1, len(outputs) + 1):
            props[f"adequacy_{n}"] = _decimal(0, 5, ADEQUACY)
            props[f"fluency_{n}"] = _decimal(0, 5, FLUENCY)
        text = {"source": material.texts.get(item, ""), "outputs": outputs}
        return Presentation(text, (), _object(props), False)
    if test == "summary":
        [system] = trial.systems
        text = {
            "document": material.texts.get(item, ""),
            "summary": str(material.outputs[(system, item)].text),
            "criteria": SUMMARY_CRITERIA,
        }
        return Presentation(text, (), _object({"summary": _decimal(0, 5)}), False)
    if test == "relevance":
        topic, _, docno = item.partition("\t")
        grade = {
            "type": "integer",
            "minimum": 0,
            "maximum": 2,
            "description": "; ".join(f"{g}: {t}" for g, t in RELEVANCE_SCALE),
        }
        # The topic statement and the document; no rank, score or run is shown.
        text = {**material.topics[topic], "document": material.documents.get(docno, "")}
        return Presentation(text, (), _object({"relevance": grade}), False)
    if test == "pos-review":
        tag = material.tags[item]
        text = {
            "before": tag.before,
            "word": tag.word,
            "after": tag.after,
            "reference": tag.gold_tag,
            "system": tag.test_tag,
        }
        return Presentation(text, (), _object({"accept": {"type": "boolean"}}), False)
    piece = material.pieces[item]
    text = {
        "before": piece.before,
        "after": piece.after,
        "reference": " ".join(piece.gold),
        "system": " ".join(piece.test),
    }
    return Presentation(text, (), _object({"accept": {"type": "boolean"}}), False)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        # float() of a whole number past 1e308 raises; such a number is no score anyway.
        return isinstance(value, int) or math.isfinite(value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _show(value: Any) -> str:
    """A refused value as the reason quotes it: short, whatever was sent."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_ANSWER_INT:
        return "a whole number beyond ±2**53"
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def validate(schema: Mapping[str, Any], value: Any, where: str = "answer") -> str | None:
    """None if ``value`` meets ``schema``, else the reason (naming the field).

    Whole numbers beyond ±2**53 are refused before any check converts them (a number
    of thousands of digits is no score); a reason quotes at most 60 characters of it.
    """
    kind = schema.get("type", "object")
    if not _type_ok(kind, value):
        article = "n" if kind[0] in "aeio" else ""
        return f"{where} must be a{article} {kind}, got {_show(value)}"
    if kind in ("integer", "number") and abs(value) > MAX_ANSWER_INT:
        return f"{where} is {_show(value)}, out of any scale"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(map(str, schema["enum"]))
        return f"{where} is {_show(value)}, not one of {allowed}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"{where} is {_show(value)}, below the scale's minimum {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"{where} is {_show(value)}, above the scale's maximum {schema['maximum']}"
    if "multipleOf" in schema:
        steps = float(value) / schema["multipleOf"]
        if abs(steps - round(steps)) > 1e-6:
            return f"{where} is {_show(value)}: give at most one decimal"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{where} is longer than {schema['maxLength']} characters"
    if kind == "array":
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 1 << 30):
            return f"{where} needs {schema.get('minItems')} entries, got {len(value)}"
        for n, element in enumerate(value):
            problem = validate(schema.get("items", {}), element, f"{where}[{n}]")
            if problem:
                return problem
    if kind == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return f"{where} lacks {key!r}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"{where} has unknown field {_show(extra[0])}; fields: {', '.join(props)}"
        for key, sub in props.items():
            if key in value:
                problem = validate(sub, value[key], key)
                if problem:
                    return problem
    return None
