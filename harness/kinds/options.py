"""The pydantic side of a kind: the base of its site-file options, and the options kinds share.

Imported only when a site file is read (a kind's ``options_model`` builds its
model then): the kind modules themselves load no pydantic, so `onsite score`,
which finds its families through the kinds, stays as light as a scorer. The
registry does not scan this module for kinds.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AudioOptions", "KindOptions", "SampleRates"]

# The sample rates an audio task accepts: at least one, each positive.
SampleRates = Annotated[list[Annotated[int, Field(gt=0)]], Field(min_length=1)]


class KindOptions(BaseModel):
    """Base of a kind's own site-file keys; a kind with none uses it as it is."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class AudioOptions(KindOptions):
    """The sample rates a task accepts: items at other rates are refused, never resampled."""

    sample_rates: SampleRates = [16000]
