# An ordinary CGI script in Python, run by tern's Python engine: compiled
# once, run request after request in one interpreter.
import os
import sys

print("Content-Type: text/plain; charset=utf-8")
print()
print(f"Hello from Python's run-time engine, process {os.getpid()}.")
print(f"SCRIPT_NAME={os.environ.get('SCRIPT_NAME', '')}")
print(f"QUERY_STRING={os.environ.get('QUERY_STRING', '')}")
body = sys.stdin.read()
if body:
    print(f"body: {len(body)} characters")
