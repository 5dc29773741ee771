# The LSP framing of the fake language servers beside it: messages read
# from stdin and written to stdout with a Content-Length header. A server
# imports it from its own folder (a script's folder is first on sys.path).
import json, sys

def read():
    """The next message from stdin; the process exits when stdin ends."""
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
    """Answers request msg with result."""
    body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
