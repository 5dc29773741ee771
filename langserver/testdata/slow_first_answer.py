# A language server whose first answer after initialize comes late, as
# gopls's does while it loads a workspace on a cold cache: the first
# request is answered after SLOW seconds (argv[1]), later ones at once.
import sys, time
sys.dont_write_bytecode = True  # the workspace it runs in stays as written
from lspframe import read, reply

slow = float(sys.argv[1])

first = True
while True:
    msg = read()
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        reply(msg, {"capabilities": {"referencesProvider": True}})
    elif msg["method"] == "shutdown":
        reply(msg, None)
    else:
        if first:
            first = False
            time.sleep(slow)
        reply(msg, [])
