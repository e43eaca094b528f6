"""gcbench.core.files: how gcbench's own process reads the JSON it wrote (issue 66, item 5)."""

import json


def test_gcbench_s_own_process_parses_json_with_its_collector_paused_and_a_users_is_left_alone(tmp_path):
    """A large result's JSON makes hundreds of thousands of objects: in gcbench's own process
    (the command line sets `files.PAUSE_COLLECTOR`) no collection runs while it is parsed and
    the collector is on again after; in a user's process (the flag unset) the collector
    runs as it would, and a collector the user turned off stays off."""
    import gc

    from gcbench.core import files

    path = tmp_path / "big.json"
    path.write_text(json.dumps({"rows": [[i, [i]] for i in range(60_000)]}))
    seen: list[int] = []

    def count(phase, info):
        if phase == "stop":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        files.PAUSE_COLLECTOR[0] = True
        try:
            files.read_json(path)
            assert seen == []
            assert gc.isenabled()
            gc.disable()
            files.read_json(path)
            assert not gc.isenabled()  # the user's choice, kept
        finally:
            gc.enable()
            files.PAUSE_COLLECTOR[0] = False
        files.read_json(path)
        assert len(seen) > 10  # a user's process: the collector ran as the objects came
    finally:
        gc.callbacks.remove(count)
