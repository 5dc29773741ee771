# A language server whose first answer after initialize comes late, as
# gopls's does while it loads a workspace on a cold cache: the first
# request is answered after SLOW seconds (argv[1]), later ones at once.
import json, sys, time

slow = float(sys.argv[1])

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

def answer(msg, result):
    body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()

first = True
while True:
    msg = read()
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        answer(msg, {"capabilities": {"referencesProvider": True}})
    elif msg["method"] == "shutdown":
        answer(msg, None)
    else:
        if first:
            first = False
            time.sleep(slow)
        answer(msg, [])
