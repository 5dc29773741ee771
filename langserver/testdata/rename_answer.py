# A language server whose rename answer is whatever the file named by its
# first argument holds (a WorkspaceEdit as JSON): a server that may answer
# a rename with any text. It answers initialize, documentSymbol (nothing)
# and shutdown; notifications are read and dropped.
import json, sys

def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(sys.stdin.buffer.read(length))

def reply(msg, result):
    body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()

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
