"""PCP on the load generators: each one recorded while the load runs, so the report can show whether the generators
kept up (a saturated generator understates what the targets can do).

On every generator the lab starts its own pmlogger (against the generator's pmcd, which provisioning's loadgen play
keeps running) as a plain process, with the system metrics below every INTERVAL_S, and stops it by its PID after the
load; the archive and pmrep's CSV of it come back into <run_dir>/loadgen/<name>/pcp/ (archive.*, metrics.csv in the
same tidy form as the targets' metrics).

    with GeneratorRecording(run_id, run_dir, engines, remote_for):
        ... the load ...
    recording.problems      # {generator: what could not be recorded or brought back}
"""
from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from lab.experiment import collect
from lab.experiment.load.engines import PRIVATE_SH, WORK, Engine, Remote

INTERVAL_S = 2
METRICS = ("kernel.all.cpu.idle", "kernel.all.cpu.user", "kernel.all.cpu.sys", "hinv.ncpu", "kernel.all.load",
           "mem.physmem", "mem.util.available", "network.interface.in.bytes", "network.interface.out.bytes")


class GeneratorRecording:
    """pmlogger on each generator while the context lasts; problems per generator, never raised (a generator that
    cannot be recorded does not stop the load: the report says it has no data)."""

    def __init__(self, run_id: str, run_dir: Path, engines: list[Engine], remote_for: Callable[[Engine], Remote],
                 log=print) -> None:
        self.run_dir, self.engines, self.remote_for, self.log = Path(run_dir), engines, remote_for, log
        self.work = f"{WORK}/{run_id}-pcp"
        self.pids: dict[str, int] = {}
        self.problems: dict[str, str] = {}

    def _dir(self, engine: Engine) -> str:
        return f"{self.work}/{engine.name}"

    def __enter__(self) -> GeneratorRecording:
        metric_lines = "\n  ".join(METRICS)
        config = f"log mandatory on every {INTERVAL_S:d} seconds {{\n  {metric_lines}\n}}\n"
        for engine in self.engines:
            d = self._dir(engine)
            script = ("set -e; "
                      "command -v pmlogger >/dev/null || { echo 'no pmlogger (PCP is not installed)'; exit 3; }; "
                      f"pmprobe hinv.ncpu >/dev/null 2>&1 || {{ echo 'pmcd does not answer here'; exit 3; }}; "
                      f"umask 077; {PRIVATE_SH}private {WORK} 022; private {self.work} 077; private {d} 077; "
                      f"cat > {d}/config; cd {d}; "
                      f"setsid nohup pmlogger -c {d}/config -l {d}/pmlogger.log {d}/archive > /dev/null 2>&1 "
                      "< /dev/null & echo $!")
            try:
                done = self.remote_for(engine).run(script, data=config.encode())
            except (OSError, subprocess.SubprocessError) as failure:
                done = subprocess.CompletedProcess([], 1, b"", str(failure).encode())
            said = done.stdout.decode().strip()
            if done.returncode == 0 and said.isdigit():
                self.pids[engine.name] = int(said)
            else:
                self.problems[engine.name] = "not recorded: " + (said or done.stderr.decode().strip())[-300:]
                self.log(f"load: WARNING: {engine.name}: {self.problems[engine.name]}")
        return self

    def __exit__(self, *exc) -> None:
        for engine in self.engines:
            pid = self.pids.get(engine.name)
            if pid is None:
                continue
            d = self._dir(engine)
            metrics = " ".join(METRICS)
            script = (f"kill {pid} 2>/dev/null; for i in $(seq 50); do kill -0 {pid} 2>/dev/null || break; sleep 0.2; "
                      f"done; kill -9 {pid} 2>/dev/null; cd {d} || exit 3; "
                      f"pmrep -a archive -t {INTERVAL_S} -o csv -Z UTC -f '%s.%f' -I {metrics} "
                      "> pmrep.csv 2> pmrep.err; "
                      "tar -c archive.* pmrep.csv pmrep.err pmlogger.log 2>/dev/null; "
                      f"rm -rf {self.work}")
            try:
                done = self.remote_for(engine).run(script, timeout=300)
                into = self.run_dir / "loadgen" / engine.name / "pcp"
                into.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
                    tar.extractall(into, filter="data")
                wide = into / "pmrep.csv"
                rows = collect.tidy_metrics(wide, into / "metrics.csv") if wide.exists() else 0
                wide.unlink(missing_ok=True)
                if not rows:
                    self.problems[engine.name] = "recorded, but pmrep gave no values (see " + str(into) + ")"
            except (OSError, subprocess.SubprocessError, tarfile.TarError) as failure:
                self.problems[engine.name] = f"not brought back: {failure}"
            if engine.name in self.problems:
                self.log(f"load: WARNING: {engine.name}: {self.problems[engine.name]}")
