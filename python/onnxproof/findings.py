"""Findings in the report's schema (DESIGN.md): code, severity, step, message, where, hint."""


def finding(code, severity, message, where="", hint="", step="export"):
    assert severity in ("error", "warning", "info"), severity
    return {"code": code, "severity": severity, "step": step, "message": message, "where": where, "hint": hint}
