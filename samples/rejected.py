# Code the validator refuses before anything runs. Each line is a classic way out of a sandbox;
# the model gets one violation per line, with the rule and a hint, and can rewrite its code.
# Run: codeact validate samples/rejected.py   (exit 1)
import subprocess

subprocess.run(["id"])
total = eval("1 + 1")
classes = ().__class__.__subclasses__()
