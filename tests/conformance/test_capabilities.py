"""The capability probes of tests/capabilities.py: each finds what it looks for, and finds
it missing where it is taken away, so a test skipped by capability is skipped for a
reason that holds."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from capabilities import claim_waits, lacking

import skiplock

from .conftest import as_release


@pytest.mark.requires("skip_locked")
def test_the_servers_here_skip_locked_rows(url: str) -> None:
    assert lacking(url, "skip_locked") is None


@pytest.mark.requires("lock_timeouts")
def test_the_servers_here_answer_refused_lock_requests(url: str) -> None:
    assert lacking(url, "lock_timeouts") is None


@pytest.mark.requires("index_names")
def test_the_servers_here_list_indexes_under_their_names(url: str) -> None:
    assert lacking(url, "index_names") is None


@pytest.mark.requires("skip_locked")
def test_a_claim_that_waits_for_held_rows_is_found(
    make_queue: Callable[..., skiplock.Queue],
) -> None:
    holder, other = make_queue(), make_queue()
    assert claim_waits(holder, other, 10.0) is None
    # the other's claims as on a server that drops the hint: they wait for held rows
    unlocked = re.compile(r"\s+SKIP LOCKED|READPAST,\s*")
    as_release(other, {n: unlocked.sub("", s) for n, s in other.dialect.sql.items()})
    assert claim_waits(holder, other, 2.0) == (
        "a claim waited more than 2 s for the job another open transaction had claimed, "
        "instead of skipping it"
    )
