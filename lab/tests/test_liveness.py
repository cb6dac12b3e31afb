"""The machines' liveness watch (lab/experiment/liveness.py) against real sockets on the loopback: a machine that stops
answering is declared dead after DEAD_AFTER probes, one that answers again is back, and collection does not
ask a dead machine (lab/experiment/collect.py skip)."""
import csv
import socket
import time

import pytest

from lab.experiment import collect, liveness


@pytest.fixture
def listener():
    """listen(ip) → a socket accepting on ip at one port shared by all (the probes' port)."""
    sockets, port = [], []

    def listen(ip):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((ip, port[0] if port else 0))
        s.listen(16)
        port.append(s.getsockname()[1])
        sockets.append(s)
        return port[0]
    yield listen
    for s in sockets:
        s.close()


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_machine_that_stops_answering_is_dead_and_one_that_answers_again_is_back(tmp_path, listener):
    port = listener("127.0.0.1")            # default answers; nothing listens on 127.0.0.2 yet (tuned)
    changes = []
    watch = liveness.MachineWatch(tmp_path, {"default": "127.0.0.1", "tuned": "127.0.0.2"}, period_s=0.1,
                                  timeout_s=1.0, port=port,
                                  on_change=lambda machine, state, since: changes.append((machine, state, since)))
    watch.start()
    try:
        assert wait_for(lambda: "tuned" in watch.dead()), watch.state
        assert "default" not in watch.dead()
        listener("127.0.0.2")               # tuned answers again
        assert wait_for(lambda: not watch.dead()), watch.state
    finally:
        summary = watch.stop()
    assert [(m, s) for m, s, _ in changes] == [("tuned", "dead"), ("tuned", "back")]
    tuned, default = summary["tuned"], summary["default"]
    assert tuned["deaths"] == 1 and tuned["dead_at"] <= tuned["back_at"] and tuned["failed"] >= liveness.DEAD_AFTER
    assert default["failed"] == 0 and default["dead_at"] is None and default["probes"] > 0
    rows = list(csv.DictReader(open(tmp_path / "host" / "liveness.csv")))
    assert {r["machine"] for r in rows} == {"default", "tuned"}
    assert any(r["machine"] == "tuned" and r["answered"] == "0" for r in rows)


def test_one_probe(listener):
    port = listener("127.0.0.1")
    assert liveness.probe_once("127.0.0.1", port=port)
    assert not liveness.probe_once("127.0.0.2", port=port, timeout_s=1.0)


def test_collection_does_not_ask_a_dead_machine(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(collect, "_guest", lambda name, args, timeout: asked.append(name) or pytest.fail("asked"))
    monkeypatch.setattr(collect, "copy_serial_console", lambda name, target: True)
    problems = collect.pull("r", tmp_path, since_epoch=0, names=("tuned",),
                            skip={"tuned": "tuned has not answered since 12:00:00 UTC (liveness probe): not collected"})
    assert asked == [] and "not collected" in problems["tuned"]
    assert "liveness probe" in (tmp_path / "tuned" / "collect-error.txt").read_text()


def test_a_dead_host_is_probed_again_on_its_own_ssh_port(listener, monkeypatch):
    # real hosts may answer SSH on another port than 22: the last probe before collection asks that port
    from lab.experiment import finish
    from lab.machines import reach
    port = listener("127.0.0.1")
    monkeypatch.setattr(reach, "wrap", lambda argv: argv)
    dead = {"tuned": time.time() - 60, "default": time.time() - 60}
    addresses = {"tuned": "127.0.0.1", "default": "127.0.0.1"}
    with socket.socket() as s:             # a port nothing listens on (bound, then let go)
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    skipped = finish.unreachable(dead, addresses, {"tuned": port, "default": closed})
    assert "tuned" not in skipped and "has not answered since" in skipped["default"]
