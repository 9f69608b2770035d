"""The benchmark's results as Markdown tables: ratios and absolute figures, with the machine
and the package versions they were measured with."""
import datetime

TARGET_CONCURRENCY = 1.15
TARGET_WRITE_MS = 5.0
TARGET_CONTEXT = 0.20
TARGET_PREFIX = 0.95
TARGET_BILLED = 1 / 3


def render(results, label):
    systems = results["systems"]
    parts = [_header(results)]
    if "cache" in results:
        parts.append(_cache(results["cache"]))
    if "finish" in results:
        parts.append(_finish(results["finish"]))
    parts += [_overhead(systems, label, results["settings"]), _concurrency(systems, label),
             _many(systems, label)]
    if "profile" in results:
        parts.append(_profile(results["profile"]))
    if "history" in results:
        parts += [_scaling(results["history"]), _context(results["history"])]
    if "startup" in results:
        parts.append(_startup(results["startup"]))
    parts += [f"- {note}" for note in results["notes"]]
    parts.append(f"Whole benchmark: {results.get('total_seconds', 0):.0f} s.")
    return "\n\n".join(p for p in parts if p)


KEPT = "not written by `bench.run`"     # a section of RESULTS.md saying this is kept when the file is written again


def document(text, results, before=""):
    """RESULTS.md: this run's tables, then the sections of the file `before` (its old text) that another bench
    wrote (those that say KEPT), as they were."""
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    kept = "".join(f"\n{section.rstrip()}\n" for section in kept_sections(before))
    return (f"# Benchmark results\n\nOne full run of `python -m bench.run` on {when}; how the harness works and what "
            f"each system runs: `bench/README.md`.\n\n{text}\n{kept}")


def kept_sections(text):
    """The `### ` sections of a RESULTS.md text that say KEPT (each up to the next `### ` or `## ` heading)."""
    sections, current = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith(("### ", "## ", "# ")):
            current = [line] if line.startswith("### ") else None
            if current is not None:
                sections.append(current)
        elif current is not None:
            current.append(line)
    return ["".join(s) for s in sections if KEPT in "".join(s)]


def _header(results):
    m, v = results["machine"], results["versions"]
    packages = ", ".join(f"{k} {x}" for k, x in v.items() if x) or "-"
    missing = ", ".join(k for k, x in v.items() if not x)
    return (f"Machine: {m.get('cpu', '?')}, {m.get('nproc')} CPUs (nproc), {m.get('ram_gb', '?')} GB RAM; "
            f"{m['platform']}\nPython {m['python']}; packages: {packages}" + (f"; not installed: {missing}" if missing else "")
            + f"\nLoad average (1/5/15 min) at start {m.get('load_start')}, at end {m.get('load_end')}: other "
            "processes on the machine show up as noise, most in the p99 and wall-time columns.")


def _fmt(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head, rows):
    return "\n".join([_row(head), _row(["---"] * len(head))] + [_row(r) for r in rows])


IN_MEMORY = ("agents", "pydantic_ai", "langgraph")
DURABLE = ("agents_sqlite", "langgraph_sqlite")
TARGET_IN_MEMORY = 1 / 10
TARGET_DURABLE = 1 / 2


def _overhead(systems, label, settings):
    data = {n: s["overhead"] for n, s in systems.items() if "mean_us" in s.get("overhead", {})}
    if not data:
        return "Loop overhead: no results.\n" + _errors(systems, "overhead", label)
    floor = data.get("floor", {}).get("mean_us")
    rows = [[label(n), "yes" if n in ("ours_fsync",) + DURABLE else "no" if n != "ours" and n != "ours_tmpfs" else
             "audit file, no fsync", _fmt(d["mean_us"]), _fmt(d["p50_us"]), _fmt(d["p99_us"]), _fmt(d["cpu_us"]),
             d["model_turns"], _fmt(d["mean_us"] * d["model_turns"] / 1000, 3), f"{d['runs']:,}",
             _fmt(d["mean_us"] / floor) if floor else "-", _fmt(d["peak_kb"]), _fmt(d["rss_mb"])]
            for n, d in data.items()]
    blocks = len(next(iter(data.values()))["blocks"])
    text = (f"### 1. Loop overhead per model turn\n\nThe Xi'an workload (weather + hotels in parallel, booking, answer). "
            f"All systems in {blocks} blocks interleaved in rotating order: one worker process per system, each block "
            f"gives every system in turn {settings['slice']:g} s of runs while the others wait (after "
            f"{settings['warmup']} warm-up runs in the first block). A run is timed whole; per model turn = run time ÷ "
            "the model turns it made. Ours is timed from its setup on: tool set, `runs.begin` (first audit file), the "
            "two preface turns (plan + reads; the booking held as a proposal, the run suspends), the user's reply "
            "asking to check again (`runs.answer`: not a confirmation, so it declines the held call), then the three "
            "turns the peers make, the booking held again: the run suspends, the user's 「确认」 (`runs.answer`), the "
            "loop makes the approved call itself (no model turn), the model answers. Five model turns and eleven audit "
            "writes a run. The peers get the preface as their input history and make three model turns; the durable "
            "peers create their session/thread inside the timed run and store that input too.\n\n"
            + _table(["system", "durable", "mean µs/model turn", "p50", "p99", "CPU µs/turn", "model turns/run",
                      "ms/run", "runs", "× floor", "peak KB/run", "max RSS MB"], rows))
    text += _ratio(data, "ours", IN_MEMORY, TARGET_IN_MEMORY, "fsync off", "in-memory peer", label)
    text += _ratio(data, "ours_fsync", DURABLE, TARGET_DURABLE, "fsync on", "durable peer", label)
    if "ours_tmpfs" in data:
        text += _ratio(data, "ours_tmpfs", IN_MEMORY, TARGET_IN_MEMORY, "fsync off, audit on tmpfs (no target)",
                       "in-memory peer", label, verdict=False)
    return text + _errors(systems, "overhead", label)


def _ratio(data, ours, peers, target, what, kind, label, verdict=True):
    """Ours ÷ the fastest peer: over all samples, and block by block (median, range)."""
    import statistics
    present = [p for p in peers if p in data]
    if ours not in data or not present:
        return ""
    fastest = min(present, key=lambda p: data[p]["mean_us"])
    pooled = data[ours]["mean_us"] / data[fastest]["mean_us"]
    per_block = sorted(a / b for a, b in zip(data[ours]["blocks"], data[fastest]["blocks"]))
    median = statistics.median(per_block)
    text = (f"\n\nOurs, {what}, ÷ the fastest {kind} ({label(fastest)}, {_fmt(data[fastest]['mean_us'])} µs/model "
            f"turn): {median:.3f} (median of {len(per_block)} per-block ratios, range {per_block[0]:.3f}-"
            f"{per_block[-1]:.3f}; {pooled:.3f} over all samples), i.e. {1 / median:.1f}× cheaper per model turn")
    if verdict:
        text += (f". Target ≤ {target:.2g}: " + ("met" if median <= target else "NOT met") + ".")
    return text if verdict else text + "."
def _errors(systems, task, label):
    bad = [f"\n- {label(n)}: {task} failed: {s[task]['error']}" for n, s in systems.items()
           if "error" in s.get(task, {})]
    return "".join(bad)


def _concurrency(systems, label):
    rows = [[label(n), _fmt(s["concurrency"]["median_s"], 3), _fmt(s["concurrency"]["median_ratio"], 3),
             _fmt(s["concurrency"]["worst_ratio"], 3)]
            for n, s in systems.items() if "median_ratio" in s.get("concurrency", {})]
    if not rows:
        return ""
    return ("### 2. Concurrency\n\nOne turn with three tools each sleeping 0.2 s (two get_weather, one search_hotels), "
            f"then the answer. Target wall / 0.2 s ≤ {TARGET_CONCURRENCY}. The floor runs calls one after another "
            "by design. Ours runs its preface first, with tools that do not sleep; after the reads its scripted model "
            "answers without booking (asked once for the call, it answers again), so its run ends waiting for the user.\n\n" + _table(["system", "wall s (median)", "wall / 0.2 s (median)", "worst"], rows)
            + _errors(systems, "concurrency", label))


def _many(systems, label):
    rows = [[label(n), _fmt(s["many"]["sequential_rps"], 0), _fmt(s["many"]["at_once_rps"], 0),
             _fmt(s["many"]["at_once_rps"] / s["many"]["sequential_rps"], 2), s["many"]["how"]]
            for n, s in systems.items() if "at_once_rps" in s.get("many", {})]
    if not rows:
        return ""
    n = next(s["many"]["n"] for s in systems.values() if "n" in s.get("many", {}))
    return (f"### 6. Many runs\n\n{n} runs of the workload one after another, then {n} at once in one process "
            "(the model answers instantly, so this is CPU-bound machinery under the GIL). A run of ours includes its setup and "
            "preface, its held booking confirmed by the user and made by the loop (five model turns, eleven audit writes), "
            "the peers' three model turns.\n\n"
            + _table(["system", "sequential runs/s", f"{n} at once runs/s", "at once ÷ sequential", "how"], rows)
            + _errors(systems, "many", label))


def _scaling(h):
    if "error" in h:
        return f"### 3. Scaling with history\n\nfailed: {h['error']}"
    steps = h["steps_us"]
    names = [("write", "audit write, fsync off"), ("write_fsync", "audit write, fsync on"), ("compact", "compaction"),
             ("render", "memory rendering (once per epoch: median of all)"), ("turn", "whole turn (loop only)")]
    rows = [[title] + [_fmt(steps[str(t)][key] / 1000, 3) for t in (10, 100, 200)]
            + [_fmt(steps["200"][key] / steps["10"][key], 1)] for key, title in names]
    write200 = steps["200"]["write"] / 1000
    return (f"### 3. Scaling with history\n\nOne {h['turns']}-turn run, tool results of about {h['tool_result_chars']} "
            f"characters; median over {h['reps']} runs of the 5 turns around each point; ms per turn. History grows "
            f"20× from turn 10 to 200; the audit file is {h['audit_kb_at_end']:,.0f} KB at the end. The memory block is "
            f"rendered only when a compaction epoch starts ({h.get('renders', '?')} times in the run).\n\n"
            + _table(["step (ms)", "turn 10", "turn 100", "turn 200", "200 ÷ 10"], rows)
            + f"\n\nTarget: audit write at turn 200, fsync off < {TARGET_WRITE_MS:g} ms: {write200:.2f} ms, "
            + ("met." if write200 < TARGET_WRITE_MS else "NOT met."))


def _context(h):
    if "error" in h:
        return ""
    c = h["context"]
    rows = [[t, f"{r['sent_chars']:,}", f"{r['full_chars']:,}", f"{r['sent_tokens']:,}", f"{r['full_tokens']:,}",
             f"{r['ratio'] * 100:.1f} %"] for t, r in ((t, c["at"][str(t)]) for t in (10, 100, 200))]
    last = c["at"]["200"]["ratio"]
    return ("### 4. Context sent\n\nCharacters (estimated tokens = chars / 3) of the request at a turn, with "
            "compaction (what is sent) and without (the full history), same run as above.\n\n"
            + _table(["turn", "sent chars", "full chars", "sent tokens", "full tokens", "sent / full"], rows)
            + f"\n\nTarget at turn 200 < {TARGET_CONTEXT:.0%}: {last * 100:.1f} %, "
            + ("met" if last < TARGET_CONTEXT else "NOT met")
            + f"; pairing intact (fake endpoint's API rules, every tool call answered in order, all "
            f"{c['messages_sent']} of {c['messages_full']} messages kept): {'yes' if c['pairing_ok'] else 'NO: ' + str(c['problem'])}.")


def _pct(x):
    return "-" if x is None else f"{x * 100:.1f} %"


def _cache(c):
    if "error" in c:
        return f"### 0. Requests a provider can cache\n\nfailed: {c['error']}"
    ratio = c["cached_price"]
    head = ["layout", "requests", "input tokens sent", f"billed, cached = {ratio:.0%}", "÷ previous layout",
            "billed at 25 % / 50 %", "prefix share: min between epochs", "median", "≥ 95 % (between epochs)",
            "previous request kept whole", "epoch starts"]
    text = ["### 0. Requests a provider can cache",
            f"Every request serialised as sent (JSON of the tool schemas, then JSON of the messages). Prefix share = "
            f"longest common prefix with the previous request ÷ this request's length. Tokens = characters / "
            f"{c['chars_per_token']} (estimate, no tokenizer); cached = the exact common prefix (providers round it "
            f"down to their blocks); billed = fresh + cached × {ratio:g}. \"previous layout\" re-creates, over the "
            "same record, the layout before the epochs (59c875c): memory block re-rendered into messages[0] every "
            "request, old tool results summarised to ~160 characters, recent ones cut to 4,000. \"append-only\" is "
            "the first system message then every message as recorded (the ideal prefix, never smaller)."]
    verdicts = []
    runs = (("xian", "Xi'an run (proposal in words, 「确认」, booking, answer)"),
            ("reads", "50-read task (one hotel search a turn, about 330-character results)"),
            ("long", f"{c['turns']}-turn run (2 KB search_hotels results, compaction budget {c['compact_budget']:,} tokens)"))
    for run, title in ((r, t) for r, t in runs if r in c):
        layouts = c[run]
        old = layouts["previous layout"]["billed_tokens"]
        rows = []
        for name, d in layouts.items():
            rows.append([name, d["turns"], f"{d['input_tokens']:,.0f}", f"{d['billed_tokens']:,.0f}",
                         f"{d['billed_tokens'] / old:.2f}",
                         f"{d['billed_at']['0.25']:,.0f} / {d['billed_at']['0.5']:,.0f}",
                         _pct(d["min_share_between_epochs"]), _pct(d["median_share"]),
                         f"{d['share_95_between_epochs']} of {d['between_epochs']}",
                         f"{d['kept_between_epochs']} of {d['between_epochs']}", d["epoch_starts"]])
        text.append(f"**{title}**\n\n" + _table(head, rows))
        ours = layouts["ours"]
        verdicts.append(f"{title.split(' (')[0]}: prefix share between epochs ≥ {TARGET_PREFIX:.0%} in "
                        f"{ours['share_95_between_epochs']} of {ours['between_epochs']} requests (min "
                        f"{_pct(ours['min_share_between_epochs'])}), "
                        + ("met" if ours["share_95_between_epochs"] == ours["between_epochs"] else "NOT met")
                        + "; every request between epochs extends the previous one whole: "
                        + ("yes" if ours["kept_between_epochs"] == ours["between_epochs"] else "NO"))
    if "reads" in c:
        shares = [row["prefix_share"] for row in c["reads"]["ours"]["per_turn"][1:]]
        first = next((i for i, x in enumerate(shares, 2) if all(y >= 0.9 for y in shares[i - 2:])), None)
        verdicts.append(f"50-read task: cached share ≥ 90 % from request {first} of {len(shares) + 1} on (below it "
                        "only while one turn's new part is more than a tenth of the request)")
    long = c["long"]
    billed = long["ours"]["billed_tokens"] / long["previous layout"]["billed_tokens"]
    verdicts.append(f"billed input tokens over the {c['turns']}-turn run ≤ 1/3 of the previous layout: "
                    f"{billed:.2f}×, " + ("met" if billed <= TARGET_BILLED else "NOT met"))
    if "bound_billed" in long["ours"]:
        old = long["previous layout"]["billed_tokens"]
        text.append(
            "Lower bound (`cache.lower_bound`): a bound on the billed input tokens of any layout that sends every message "
            "of the record (the API's pairing rule; our compaction keeps every message): fresh only for what is new "
            "since the previous request, everything older at the cached price, with the prompt alone as system "
            "message, assistant messages as recorded and every older tool result shrunk to `{}`. "
            f"Xi'an run: {c['xian']['ours']['bound_billed']:,.0f} (ours {c['xian']['ours']['billed_tokens']:,.0f}); "
            f"{c['turns']}-turn run: {long['ours']['bound_billed']:,.0f} = {long['ours']['bound_billed'] / old:.2f}× "
            f"the previous layout (ours {billed:.2f}×), so no such layout can bill ≤ 1/3 of it: the cached old "
            "messages alone cost more.")
    if c.get("sweep"):
        rows = [[f"{int(b):,}", f"{d['input_tokens']:,.0f}", f"{d['billed_tokens']:,.0f}",
                 f"{d['billed_tokens'] / long['previous layout']['billed_tokens']:.2f}", d["epoch_starts"],
                 _pct(d["median_share"])] for b, d in sorted(c["sweep"].items(), key=lambda kv: int(kv[0]))]
        text.append(f"Our layout on the {c['turns']}-turn run with other compaction budgets (`Run.compact_budget`, "
                    "a run setting):\n\n" + _table(["compaction budget (tokens)", "input tokens sent",
                                                      f"billed, cached = {ratio:.0%}", "÷ previous layout",
                                                      "epoch starts", "median prefix share"], rows))
    text.append("Targets: " + "; ".join(verdicts) + ".")
    return "\n\n".join(text)


FINISH_LABELS = {"ours": "ours", "ours_eager": "ours, eager model (books before asking, like the peers' model)",
                 "agents": "OpenAI Agents SDK (`needs_approval`, `RunState` resume)",
                 "pydantic_ai": "pydantic-ai (`requires_approval`, deferred tool results)",
                 "langgraph": "LangGraph (`interrupt()`, `InMemorySaver`, `Command(resume=...)`)",
                 "pydantic_ai_words": "pydantic-ai, proposal in words (the confirmation a new run over the history)",
                 "langgraph_words": "LangGraph, proposal in words (the confirmation a new message on the thread)"}


def _finish(f):
    title = "### 0b. What finishing the task costs"
    if "error" in f:
        return f"{title}\n\nfailed: {f['error']}"
    systems = f["systems"]
    done = {n: d for n, d in systems.items() if "calls" in d}
    rows = [[FINISH_LABELS.get(n, n), d["calls"], d["pauses"], f"{d['input_tokens']:,.0f}", f"{d['billed_tokens']:,.0f}",
             " / ".join(f"{x:,}" for x in d["per_call"]), f"{d.get('tools_tokens', 0):,.0f}",
             f"{d['kept']} of {d['calls'] - 1}"] for n, d in done.items()]
    text = [title,
            "The whole Xi'an task from the user's goal to the final answer, the user's approval given once, every request "
            "the scripted model received recorded. Ours: the run of section 0 (turn 1 `set_plan` + `get_weather` + "
            "`search_hotels`; turn 2 the proposal in words, answered by the loop's offer nudge asking for the exact "
            "call; turn 3 `book_hotel`, forced, held as the proposal: the run suspends; the user's 「确认」 via "
            "`runs.answer` approves it and the loop makes that call itself, no model call; turn 4 the answer). "
            "Ours, eager model: the peers' decisions (turn 2 `book_hotel` "
            "before asking: blocked as the proposal, the run suspends at once; after 「确认」 the loop itself makes that "
            "exact call, recorded as the loop's, no model call, and the model is sent its own call answered by the "
            "receipt; turn 3 the answer). Each peer: the same decisions in its own human-approval flow "
            "(turn 1 `set_plan` + `get_weather` + `search_hotels`; turn 2 `book_hotel`, which needs approval: the run "
            "pauses, the harness approves, the run resumes, the booking runs; turn 3 the answer). The peers get the same system "
            "prompt (`tools.INSTRUCTIONS`), the goal as the user's message and the five tools with the descriptions our "
            "loop sends; their parameter schemas are each framework's own, generated from the signatures; ours are what "
            "our loop shows the model (`toolset.shown`: types, required, enums, descriptions; set_plan's step as an object, "
            "its fields in its description; the patterns, length limits, ranges and `additionalProperties` stay in the "
            "declarations every call is validated against). Each request "
            "is serialised as Chat Completions JSON (tool schemas, then messages) and its text counted: tokens = "
            f"characters / {f['chars_per_token']} (estimate, no tokenizer); billed = fresh + cached × "
            f"{f['cached_price']:g}, cached = the exact common prefix with the previous request (the rule of section 0).",
            _table(["system", "model calls to finish", "pauses for the user", "input tokens sent",
                    f"billed, cached = {f['cached_price']:.0%}", "tokens per call", "of which tool schemas, per call",
                    "previous request kept whole"], rows),
            "How each system's requests were serialised:\n\n"
            + "\n".join(f"- {FINISH_LABELS.get(n, n)}: {d['how']}." for n, d in done.items())]
    skipped = [f"- {FINISH_LABELS.get(n, n)} skipped: {d['skipped']}" for n, d in systems.items() if "skipped" in d]
    if skipped:
        text.append("\n".join(skipped))
    peers = {n: d for n, d in done.items() if not n.startswith("ours") and not n.endswith("_words")}
    in_words = {n: d for n, d in done.items() if n.endswith("_words")}
    if "ours" in done and peers:
        ours = done["ours"]
        if in_words:                          # ours proposes in words: the peers proposing in words are its nearest match
            same = min(in_words, key=lambda n: in_words[n]["billed_tokens"])
            billed, theirs = ours["billed_tokens"], in_words[same]["billed_tokens"]
            text.append(f"Proposal in words, four calls each: ours billed {billed:,.0f} against "
                        f"{FINISH_LABELS[same].split(',')[0]}'s {theirs:,.0f} ({billed / theirs - 1:+.1%}; ours "
                        "sends the offer nudge, the loop's one message asking for the exact call, which the peers' "
                        "words flows do not have: a 「确认」 in words lets their model's next booking run).")
        fewest = min(d["calls"] for d in done.values())
        cheapest = min(peers, key=lambda n: peers[n]["billed_tokens"])
        eager = done.get("ours_eager")
        calls_ok = ours["calls"] <= (eager["calls"] if eager else fewest) + 1
        target = [f"Target: the words flow at most one model call more than the eager one ({ours['calls']} against "
                  f"{eager['calls'] if eager else fewest}): " + ("met" if calls_ok else "NOT met")]
        if eager:
            billed_ok = eager["billed_tokens"] <= peers[cheapest]["billed_tokens"]
            target.append(f"eager, ours billed no more than the leanest peer ({eager['billed_tokens']:,.0f} against "
                          f"{FINISH_LABELS[cheapest].split(' (')[0]}'s {peers[cheapest]['billed_tokens']:,.0f}): "
                          + ("met" if billed_ok else "NOT met"))
        text.append("; ".join(target) + ".")
        if "ours_eager" in done:
            same = min(peers.values(), key=lambda d: d["calls"])["calls"]
            eager = done["ours_eager"]
            leanest = min(d["input_tokens"] for d in peers.values())
            text.append(f"Driven by the same (eager) model behaviour: ours {eager['calls']} model calls against {same} "
                        f"for the peers with the fewest; billed {eager['billed_tokens']:,.0f} against "
                        f"{FINISH_LABELS[cheapest].split(' (')[0]}'s {peers[cheapest]['billed_tokens']:,.0f} ("
                        + ("met" if eager["billed_tokens"] <= peers[cheapest]["billed_tokens"] else "NOT met")
                        + f"); input tokens {eager['input_tokens']:,.0f} against the leanest peer's {leanest:,.0f} + 10 % ("
                        + ("met" if eager["input_tokens"] <= 1.1 * leanest else "NOT met") + ").")
    elif "ours" not in done:
        text.append("Target: not checked (ours did not finish).")
    else:
        text.append("Target: not checked (no peer framework finished; `pip install -r bench/requirements-peers.txt` "
                    "runs them beside ours).")
    return "\n\n".join(text)


def _profile(p):
    if "error" in p:
        return f"### 1b. Where our turn goes\n\nfailed: {p['error']}"
    steps = _table(["step (cumulative)", "µs per model turn", "share"],
                   [[s["step"], _fmt(s["cum_us"]), _pct(s["share"])] for s in p["steps"]])
    funcs = _table(["function (own time)", "µs per model turn", "share", "calls per turn"],
                   [[f"`{f['function']}`", _fmt(f["own_us"]), _pct(f["share"]), _fmt(f["calls_per_turn"])]
                    for f in p["functions"][:12]])
    return (f"### 1b. Where our turn goes\n\ncProfile over {p['runs']} runs of ours (fsync off, audit on disk), "
            f"{p['model_turns']:,} model turns: {_fmt(p['total_us_per_turn'])} µs per model turn under the profiler "
            "(it slows Python code more than C: read the shares). It sees the main thread only: the tools, run on the "
            "executor's worker threads, show as the wait for them. The run setup row overlaps the audit-write row "
            "(its first write).\n\n" + steps + "\n\n" + funcs)


def _startup(s):
    if "error" in s:
        return f"### 5. Start-up\n\nfailed: {s['error']}"
    rows = []
    for mode, r in s["cli"].items():
        if "skipped" in r:
            rows.append([f"`python agent.py {mode}`" if mode.startswith("--") else mode, "skipped", r["skipped"], "-"])
        else:
            rows.append([f"`python agent.py {mode}`" if mode.startswith("--") else mode, _fmt(r["seconds"] * 1000, 0),
                         f"exit {r['exit']}", "yes" if r["imports_openai"] else "no"])
    f = s["first"]
    rows.append(["spawn → first model request (online path, local endpoint)", _fmt(f["first_request_s"] * 1000, 0),
                 f"whole run {f['whole_run_s'] * 1000:,.0f} ms", "yes"])
    imports = ", ".join(f"{k} {v['cumulative_ms']:.1f}" for k, v in s["imports"].items() if v)
    absent = ", ".join(k for k, v in s["imports"].items() if not v)
    return ("### 5. Start-up\n\nWall time of a fresh process (median of "
            f"{f['reps']} after one warm-up).\n\n" + _table(["what", "ms", "result", "imports openai"], rows)
            + f"\n\nImport time of each module alone, cumulative ms (`python -X importtime -c 'import X'`): {imports}."
            + (f" Not in this checkout: {absent}." if absent else ""))
