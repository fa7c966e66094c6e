"""The validator's verdict inside the child, before any of the code runs: runner.py's step for a
request with a "validate" field (the host's ExecutorOptions::validate_in_child).

The host sends the validator's policy instead of validating the code itself, so that a process
that runs once never starts the embedded interpreter. This module imports the validator package
staged beside the runner (validator/, compiled and cached like the runner's own modules:
src/backends/local/runner_files.hpp), validates the code under that policy and answers with the
"validated" frame, always the first frame after the request:

    {"type":"validated","ok":true}                      the code may run
    {"type":"validated","ok":false,"violations":[...]}  it may not: the run ends here (exit 1)

No code of the request has run when this does, so the package is the one that was staged. A
validator that cannot run is a rejection naming why (rule "internal-error"), never a pass. On a
pass the runtime guard's import list is computed here from the same policy
(validator/runtime_policy.py), in place of the list the host sends when it validated itself.
Violations that do not fit in one frame (max_frame_bytes) are cut from the end and counted.
"""

from codeact_protocol import VALIDATED_OK, encode, rejected_frame


def check(req, code):
    """Sends the verdict on `code`. Returns only when it may run, with the request's "guard"
    given the policy's import list; otherwise the run ends with the rejection."""
    import runner_state
    policy = req.get("validate")
    try:
        if type(policy) is not dict:
            raise ValueError("request field 'validate' must be an object")
        import validator
        from validator.runtime_policy import runtime_import_patterns
        report = validator.validate(code, policy)
        if report["ok"]:
            guard = req.get("guard")
            if type(guard) is dict:
                guard["imports"] = runtime_import_patterns(policy)
            runner_state.send_text(VALIDATED_OK)
            return
        violations = report["violations"]
    except BaseException as e:  # noqa: BLE001 - the validator could not run: never a pass
        violations = [{"line": 0, "col": 0, "rule": "internal-error",
                       "message": "the validator could not run in the child: %s: %s" % (
                           type(e).__name__, e),
                       "hint": "check the codeact installation"}]
    runner_state.finish(_fitted(violations, runner_state.state.max_frame), 1)


def _fitted(violations, max_frame):
    """The rejection with as many of the violations, from the first, as fit in one frame."""
    texts = [encode(v) for v in violations]
    room = max_frame - len(rejected_frame("[]", len(texts))) - 1  # the newline
    shown = 0
    used = 0
    for text in texts:
        if used + len(text) + 1 > room and shown > 0:
            break
        used += len(text) + 1
        shown += 1
    return rejected_frame("[" + ",".join(texts[:shown]) + "]", len(texts) - shown)
