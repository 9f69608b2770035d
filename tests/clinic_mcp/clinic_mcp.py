"""A clinic's front-desk server, written with the official MCP SDK (test-only; the project never imports `mcp`),
answering as real servers do: nested objects and lists of records. `find_patient(name)` gives
{"patient": {"patient_id", "name", "insurance": {...}}, "matches"}; `list_slots(doctor, date)` gives
{"doctor", "date", "slots": [{"slot_id", "start", "visit_type", "room": {...}}, ...], "internal": {...}} (150
slots on 2026-12-05, a busy day). `python clinic_mcp.py` serves stdio; `python clinic_mcp.py --http` serves
Streamable HTTP on 127.0.0.1 (a free port, its URL on the first stderr line)."""
import socket
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("clinic")
PATIENTS = {"Ana Lopez": {"patient_id": "P-17", "name": "Ana Lopez", "insurance": {"provider": "Acme", "member": "M-9"}}}


@app.tool()
def find_patient(name: str) -> dict:
    """A patient by name."""
    if name not in PATIENTS:
        raise ValueError(f"no patient named {name}")
    return {"patient": PATIENTS[name], "matches": 1}


@app.tool()
def list_slots(doctor: str, date: str) -> dict:
    """A doctor's free slots on a day."""
    times = ["09:00", "10:30", "14:00"] if date != "2026-12-05" else [f"{8 + i // 12:02d}:{i % 12 * 5:02d}" for i in range(150)]
    return {"doctor": doctor, "date": date, "internal": {"billing_code": "B-77", "note": "staff only"},
            "slots": [{"slot_id": "S-" + t.replace(":", ""), "start": t, "visit_type": "checkup",
                       "room": {"floor": 2, "number": "2.14"}} for t in times]}


def serve_http():
    import uvicorn
    web = app.streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"MCP server at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    uvicorn.Server(uvicorn.Config(web, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    serve_http() if "--http" in sys.argv[1:] else app.run()
