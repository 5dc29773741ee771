# A language server whose rename answer is whatever the file named by its
# first argument holds (a WorkspaceEdit as JSON): a server that may answer
# a rename with any text. It answers initialize, documentSymbol (nothing)
# and shutdown; notifications are read and dropped.
import json, sys
sys.dont_write_bytecode = True  # the workspace it runs in stays as written
from lspframe import read, reply

while True:
    msg = read()
    method = msg.get("method")
    if "id" not in msg:
        if method == "exit":
            sys.exit(0)
        continue
    if method == "initialize":
        reply(msg, {"capabilities": {"renameProvider": True, "documentSymbolProvider": True}})
    elif method == "textDocument/rename":
        with open(sys.argv[1]) as f:
            reply(msg, json.load(f))
    elif method == "textDocument/documentSymbol":
        reply(msg, [])
    else:
        reply(msg, None)
