# A command tool: keyword arguments arrive as JSON on stdin, the result leaves as JSON on stdout.
import json
import sys

kwargs = json.load(sys.stdin)
json.dump(kwargs["a"] + kwargs["b"], sys.stdout)
