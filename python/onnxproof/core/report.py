"""The typed Report the Python API returns: read from the run folder's report.json
(onnxproof.report/2, DESIGN.md), which stays the one source; to_dict() gives it back whole."""
import dataclasses
import json
import os

from . import contract


@dataclasses.dataclass(frozen=True)
class Finding:
    code: str
    severity: str  # error | warning | info
    step: str
    message: str
    where: str = ""
    hint: str = ""

    def __str__(self):
        where = f" at {self.where}" if self.where else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.severity} {self.code}{where}: {self.message}{hint}"


@dataclasses.dataclass(frozen=True)
class Answer:
    """One of the five headline questions, answered yes / no / not run, with its evidence."""
    question: str
    answer: str
    evidence: str


@dataclasses.dataclass(frozen=True)
class ParityRow:
    """One comparison: a reference case on one provider and optimization level, one output.

    Every figure may be None: a row where PyTorch or ONNX Runtime gave no tensor to compare (a
    missing output, a failed run) has no error figures, and an integer output has no argmax.
    Fields the engine adds later (the rule that decided, ratios, budgets) are kept in `extra`."""
    case: str = ""
    provider: str = ""
    optimization: str = ""
    output: str = ""
    sizes: dict = dataclasses.field(default_factory=dict)
    status: str = ""
    max_abs: float = None
    max_rel: float = None
    mismatches: int = None
    elements: int = None
    argmax_flips: int = None
    extra: dict = dataclasses.field(default_factory=dict, compare=False)


@dataclasses.dataclass(frozen=True)
class Report:
    verdict: str  # pass | fail | error
    model: str
    folder: str   # the run folder
    steps: dict   # step name -> pass | fail | skip | error
    headline: tuple
    findings: tuple
    parity: tuple
    raw: dict = dataclasses.field(repr=False, compare=False)
    # Where the outputs first diverge (report.json's "localization", or RUN/localize/localization.json
    # that onnxproof.prove or `onnxproof localize` wrote after the run); None when none ran.
    localization: dict = dataclasses.field(default=None, repr=False, compare=False)
    # Detection sets matched as sets (report.json's "detections", docs/detection.md): one dict per
    # set x case x provider x optimization level (matched, only_source, worst_box_error, ...).
    detections: tuple = dataclasses.field(default=(), repr=False, compare=False)

    @property
    def located(self):
        """The module named by the localization ('' is the model itself), or None."""
        return (self.localization or {}).get("located")

    @property
    def passed(self):
        return self.verdict == "pass"

    @property
    def errors(self):
        return tuple(f for f in self.findings if f.severity == "error")

    def codes(self, severity=None):
        """The finding codes, in report order (of one severity when given)."""
        return [f.code for f in self.findings if severity in (None, f.severity)]

    def path(self, name):
        """A file of the run folder: 'model.onnx', 'report.html', 'golden', ..."""
        return os.path.join(self.folder, name)

    @property
    def model_path(self):
        """The model the proof is about: the simplified one when the run wrote it."""
        simplified = self.path("model.sim.onnx")
        return simplified if os.path.exists(simplified) else self.path("model.onnx")

    @property
    def what_to_do(self):
        """What the report says to do first (after a repair: where its proved fix lies)."""
        return (self.raw.get("ship") or {}).get("what_to_do", "")

    @property
    def repair(self):
        """After prove(..., repair=True) on a failed run: RUN/repair/repair.json (onnxproof.repair/1:
        "repaired", "repair" {"folder", "change", "model", "diff"}, "attempts" [...]); None when no
        repair ran."""
        path = self.path(os.path.join("repair", "repair.json"))
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)

    @property
    def given_file(self):
        """With prove(onnx=...) / --onnx: {"path", "sha256", "inputs", "outputs"}, the user's file
        proved as it is and how its inputs and outputs were bound to the model's; else None."""
        return self.raw.get("given_file")

    @property
    def generation(self):
        """With --generate / generate=N: report.json's generate step ({"status", "steps", "providers":
        [{provider, rule, passed, identical_steps, first_token_difference, first_failure, table: [per
        step]}], ...}), else None."""
        return next((step for step in self.raw.get("steps", []) or [] if step.get("name") == "generate"), None)

    @property
    def accuracy(self):
        """With labelled data: per output, {"samples", "flipped", "accuracy": {"source": .., "cpu": ..}}."""
        return list(self.raw.get("summary", {}).get("accuracy", []))

    def to_dict(self):
        return json.loads(json.dumps(self.raw))

    def __str__(self):
        lines = [f"onnxproof: {self.model}: {self.verdict}"]
        lines += [f"  {a.answer:<8} {a.question}  [{a.evidence}]" for a in self.headline]
        lines += [f"  {f}" for f in self.findings if f.severity != "info"]
        lines.append(f"  report: {self.path('report.md')}")
        return "\n".join(lines)


def _parity_row(values):
    """A ParityRow from a report row; null sizes read as none, fields this reader does not know
    go to `extra` (a newer engine's report stays readable)."""
    names = {field.name for field in dataclasses.fields(ParityRow)}
    known = {name: value for name, value in values.items() if name in names and name != "extra"}
    known["sizes"] = dict(known.get("sizes") or {})
    return ParityRow(**known, extra={name: value for name, value in values.items() if name not in names})


def _answer(values):
    return Answer(**{key: str(values.get(key, "")) for key in ("question", "answer", "evidence")})


REPORT_1 = "onnxproof.report/1"


def _rename(entry, old, new):
    if isinstance(entry, dict) and old in entry:
        entry[new] = entry.pop(old)


def _parity_rows_from_1(rows):
    for row in rows if isinstance(rows, list) else []:
        _rename(row, "pytorch_error", "source_error")
        _rename(row.get("steps") if isinstance(row, dict) else None, "pytorch", "source")


def upgraded_from_1(raw):
    """An onnxproof.report/1 document with /2's names: /1 keyed the source framework's figures
    "pytorch" whatever the framework (parity rows' pytorch_error and steps.pytorch, detections'
    pytorch and only_pytorch, accuracy's pytorch, the generation table's pytorch_tokens); /2 says
    "source". The engine reads old reports the same way (report/published_report.cpp)."""
    if not isinstance(raw, dict) or raw.get("schema") != REPORT_1:
        return raw
    raw = json.loads(json.dumps(raw))
    _parity_rows_from_1(raw.get("parity"))
    for row in raw.get("detections") or []:
        _rename(row, "pytorch", "source")
        _rename(row, "only_pytorch", "only_source")
    for accuracy in (raw.get("summary") or {}).get("accuracy") or []:
        _rename(accuracy.get("accuracy") if isinstance(accuracy, dict) else None, "pytorch", "source")
    for step in raw.get("steps") or []:
        if isinstance(step, dict) and step.get("name") == "quantize":
            _parity_rows_from_1(step.get("rows"))
        for provider in (step.get("providers") or []) if isinstance(step, dict) else []:
            for row in (provider.get("table") or []) if isinstance(provider, dict) else []:
                _rename(row, "pytorch_tokens", "source_tokens")
    raw["schema"] = contract.REPORT
    return raw


def report_document(raw, path):
    """`raw`, report.json's parsed content, once it holds to schemas/report.schema.json, the check
    the engine's reader makes too (report/published_report.h); ValueError naming `path` otherwise.
    A report of version 1 is read with version 2's names (upgraded_from_1). Every reader of a
    report in the package goes through it."""
    raw = upgraded_from_1(raw)
    if not isinstance(raw, dict) or raw.get("schema") != contract.REPORT:
        found = raw.get("schema") if isinstance(raw, dict) else None
        raise ValueError(f"{path} is not an onnxproof report (schema {found!r}, this onnxproof reads "
                         f"{contract.REPORT!r})")
    try:
        contract.validate(raw, "report", root=path)
    except contract.ContractError as error:
        raise ValueError(f"{path} is not a readable onnxproof report: {error}") from None
    return raw


def read_report(folder):
    """The Report of a run folder (ValueError when it holds no onnxproof report)."""
    path = os.path.join(folder, "report.json")
    with open(path, encoding="utf-8") as handle:
        raw = report_document(json.load(handle), path)
    model = raw.get("model")
    localization = raw.get("localization")
    findings = list(raw.get("findings", []) or [])
    separate = os.path.join(folder, "localize", "localization.json")
    if not localization and os.path.exists(separate):
        with open(separate, encoding="utf-8") as handle:
            localization = json.load(handle)
        findings += localization.get("findings", []) or []
    return Report(
        verdict=raw["verdict"],
        model=model if isinstance(model, str) else json.dumps(model),
        folder=os.path.abspath(folder),
        steps={step.get("name", ""): step.get("status", "") for step in raw.get("steps", []) or []},
        headline=tuple(_answer(answer) for answer in raw.get("headline", []) or []),
        findings=tuple(Finding(**{key: str(finding.get(key, "")) for key in
                                  ("code", "severity", "step", "message", "where", "hint")})
                       for finding in findings),
        parity=tuple(_parity_row(row) for row in raw.get("parity", []) or []),
        raw=raw, localization=localization if localization and "modules" in localization else None,
        detections=tuple(dict(row) for row in raw.get("detections", []) or []))
