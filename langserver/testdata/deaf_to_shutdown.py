# A language server that answers initialize and then nothing: a server
# busy loading a workspace, as gopls may be when the host ends.
import sys
sys.dont_write_bytecode = True  # the workspace it runs in stays as written
from lspframe import read, reply

while True:
    msg = read()
    if msg.get("method") == "initialize":
        reply(msg, {"capabilities": {}})
