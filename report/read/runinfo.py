"""What a run folder holds: run.json (tolerantly: any key may be missing) and which expected files are absent."""
import json
from pathlib import Path

from . import MACHINES

# Files each machine folder should have; the report says which are missing instead of failing.
EXPECTED_FILES = ("jmeter.jtl", "pcp/metrics.csv", "logs/app.log", "logs/gc.log", "logs/httpd-error.log",
                  "logs/journal.txt")


class RunInfo:
    def __init__(self, folder):
        self.folder = Path(folder)
        self.problems = []  # what could not be read, said in the report
        self.data = {}
        path = self.folder / "run.json"
        if not path.exists():
            self.problems.append("run.json is missing")
        else:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.data = data if isinstance(data, dict) else {}
            except ValueError as e:
                self.problems.append(f"run.json is not valid JSON ({e})")

    def get(self, *keys, default=None):
        """Nested lookup, e.g. get('load', 'warmup_s'); default when any level is missing or null."""
        value = self.data
        for key in keys:
            if not isinstance(value, dict) or value.get(key) is None:
                return default
            value = value[key]
        return value

    @property
    def run_id(self):
        return self.get("run_id", default=self.folder.resolve().name)

    @property
    def status(self):
        return self.get("status", default="unknown")

    @property
    def load(self):
        """run.json's load profile. Also accepts the profile nested as load.profile (lab/load/runner.py's
        LoadResult.to_dict()), with load's own keys winning."""
        load = self.get("load", default={})
        if not isinstance(load, dict):
            return {}
        nested = load.get("profile") if isinstance(load.get("profile"), dict) else {}
        return {**nested, **{k: v for k, v in load.items() if k != "profile" and v is not None}}

    @property
    def warmup_s(self):
        return self.load.get("warmup_s")

    def machine_dir(self, machine):
        return self.folder / machine

    def missing_files(self):
        """['default/logs/journal.txt', ...]: expected files absent from the folder (whole machine folders
        are named once)."""
        missing = []
        for machine in MACHINES:
            mdir = self.machine_dir(machine)
            if not mdir.is_dir():
                missing.append(f"{machine}/ (the whole machine folder)")
                continue
            missing += [f"{machine}/{name}" for name in EXPECTED_FILES if not (mdir / name).exists()]
        return missing

    def dashboards(self):
        """{machine: relative link} of JMeter's own HTML dashboards that exist."""
        links = {}
        for machine in MACHINES:
            index = self.folder / "jmeter-dashboard" / machine / "index.html"
            if index.exists():
                links[machine] = f"jmeter-dashboard/{machine}/index.html"
        return links
