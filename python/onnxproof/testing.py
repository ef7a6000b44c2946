"""pytest (or unittest) helper: a test that fails with the proof's findings as its message.

    from onnxproof.testing import assert_proved

    def test_model_exports_faithfully():
        assert_proved(build_model(), (torch.randn(2, 3, 32, 32),), dynamic_axes={"x": {0: "batch"}})
"""
from .api import prove


def assert_proved(model, args=(), kwargs=None, **options):
    """Runs onnxproof.prove(model, args, kwargs, **options) and raises AssertionError unless the
    verdict is pass; the message lists every error and warning finding and the report's path.
    Returns the Report when it passes."""
    options.setdefault("quiet", True)
    report = prove(model, args, kwargs, **options)
    if not report.passed:
        raise AssertionError(f"onnxproof did not prove {report.model} ({report.verdict}):\n{_explain(report)}")
    return report


def _explain(report):
    lines = [f"  {finding}" for finding in report.findings if finding.severity in ("error", "warning")]
    lines += [f"  step {name}: {status}" for name, status in report.steps.items() if status == "error"]
    lines.append(f"  report: {report.path('report.md')}")
    return "\n".join(lines)
