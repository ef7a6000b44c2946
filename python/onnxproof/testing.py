"""pytest (or unittest) helper: a test that fails with the proof's findings as its message.

    from onnxproof.testing import assert_proved

    def test_model_exports_faithfully():
        assert_proved(build_model(), (torch.randn(2, 3, 32, 32),), dynamic_axes={"x": {0: "batch"}})

The failure message is the findings alone (at most MAX_LISTED of them, then a count); what the
export and torch printed, logged or warned is in the run folder's export.log, not in the test's
output.
"""
from .api import prove

# The most findings a failure message lists; the rest are counted and are in report.md.
MAX_LISTED = 20


def assert_proved(model, args=(), kwargs=None, **options):
    """Runs onnxproof.prove(model, args, kwargs, **options) (quiet unless told otherwise) and
    raises AssertionError unless the verdict is pass; the message lists the error and warning
    findings and the report's path. Returns the Report when it passes."""
    __tracebackhide__ = True  # pytest shows the test's line, not this helper's
    options.setdefault("quiet", True)
    report = prove(model, args, kwargs, **options)
    if not report.passed:
        raise AssertionError(f"onnxproof did not prove {report.model} ({report.verdict}):\n{explain(report)}")
    return report


def explain(report):
    """The failure message's lines: error and warning findings (errors first, one line each), the
    steps that could not run, and where the report is."""
    findings = sorted((f for f in report.findings if f.severity in ("error", "warning")),
                      key=lambda f: f.severity != "error")
    lines = [f"  {_one_line(finding)}" for finding in findings[:MAX_LISTED]]
    if len(findings) > MAX_LISTED:
        lines.append(f"  ... and {len(findings) - MAX_LISTED} more findings")
    lines += [f"  step {name}: {status}" for name, status in report.steps.items() if status == "error"]
    lines.append(f"  report: {report.path('report.md')}")
    return "\n".join(lines)


def _one_line(finding, limit=400):
    text = " ".join(str(finding).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
