"""A model's call record is stored as the JSON it had before script calls existed."""

from __future__ import annotations

import json

from kode.sessions._common import dump_records
from kode.sessions.records import CallUpdated


def test_a_model_call_is_stored_without_a_parent_and_a_script_call_with_it() -> None:
    model_call = CallUpdated(call_id="t1", name="lookup", status="running", read_only=True)
    script_call = CallUpdated(
        call_id="t2.1", name="lookup", status="running", input={"q": 1}, parent_call_id="t2"
    )
    (_, first, _), (_, second, _) = dump_records([model_call, script_call])
    assert "parent_call_id" not in json.loads(first)
    assert json.loads(second)["parent_call_id"] == "t2"
    assert CallUpdated.model_validate_json(first) == model_call
    assert CallUpdated.model_validate_json(second) == script_call
