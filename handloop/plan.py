"""The planning tools every tool set has: `set_plan` and `mark_step`, declared like any tool.

Invariants: pure functions of their arguments and the state passed in (the current plan, the
names of the run's tools, the tools that succeeded); they speak the agent's language
(`tools(example, say)`); a plan step depends only on steps before it (what else `after` says is
dropped, with a note); a step that names a tool is marked done only once that tool succeeded;
both keep their facts
in the namespace "plan" (`steps`, `marks`), the only facts the loop's layers read by name, as
the plan is the loop's own (plan first, plan order, step status).
"""
from .calls import ZH, Tool, ToolError

NAMESPACE = "plan"


def steps_of(steps):
    """A plan's steps as memory keeps them: [{"index" (1-based), "title", "tool", "after" (sorted,
    no repeats, earlier steps only: an entry naming the step itself or a later one is dropped)}]."""
    return [{"index": index, "title": step["title"], "tool": step.get("tool"),
             "after": sorted({dep for dep in step.get("after", []) if dep < index})}
            for index, step in enumerate(steps, 1)]


def set_plan(steps, tool_names, say=ZH):
    """The plan as given, checked: known tools (an unknown one is an error naming the field to
    fix). A dependency on the step itself or on a later step has only one sensible reading, none:
    it is dropped and the result says so (small models write `after` as the step's own number).
    The result tells the model only what it did not write itself: that the plan stands, each
    step's number (what `after` and mark_step refer to), and what was dropped; memory takes the
    steps from the call's arguments, through the same steps_of."""
    plan, problems, notes = steps_of(steps), [], []
    for step, given in zip(plan, steps):
        index, tool = step["index"], step["tool"]
        if tool is not None and tool not in tool_names:
            problems.append(say("plan.unknown_tool", field=f"arguments.steps[{index - 1}]", tool=tool,
                                tools=", ".join(sorted(tool_names))))
        wrong = sorted({dep for dep in given.get("after", []) if dep >= index})
        if wrong:
            notes.append(say("plan.after_dropped", index=index, wrong=wrong))
    if problems:
        raise ToolError(say("schema.sep").join(problems))
    recorded = {"plan": say("plan.recorded", count=len(plan),
                            steps=say("plan.step_sep").join(f"{s['index']} {s['title']}" for s in plan))}
    return dict(recorded, note=say("schema.sep").join(notes)) if notes else recorded


def mark_step(index, status, plan, done_tools=(), note="", say=ZH):
    """The step marked, named by its number and title (the note is the model's own: not echoed).
    A step that names a tool is done when that tool succeeded: marking it done before is refused,
    naming the tool."""
    if not plan:
        raise ToolError(say("plan.none"))
    if index > len(plan):
        raise ToolError(say("plan.no_step", count=len(plan), index=index))
    tool = plan[index - 1].get("tool")
    if status == "done" and tool and tool not in done_tools:
        raise ToolError(say("plan.not_done", index=index, tool=tool))
    return {"index": index, "title": plan[index - 1]["title"], "status": status}


def _planned(facts, args, result):
    facts["steps"], facts["marks"] = steps_of(args.get("steps", [])), {}


def _marked(facts, args, result):
    facts["marks"] = dict(facts.get("marks", {}), **{str(args.get("index")): {
        "status": args.get("status"), "note": args.get("note", "")}})


PLAN_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["steps"],
               "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": 12, "items": {
                   "type": "object", "additionalProperties": False, "required": ["title"],
                   "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 200},
                                  "tool": {"type": "string", "maxLength": 64},
                                  "after": {"type": "array", "maxItems": 12,
                                            "items": {"type": "integer", "minimum": 1, "maximum": 12}}}}}}}
PLAN_SHOWN = {"type": "object", "required": ["steps"],      # a step's fields: set_plan's description says them
              "properties": {"steps": {"type": "array", "items": {"type": "object"}}}}
MARK_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["index", "status"],
               "properties": {"index": {"type": "integer", "minimum": 1, "maximum": 12},
                              "status": {"type": "string", "enum": ["done", "failed"]},
                              "note": {"type": "string", "maxLength": 500}}}


def tools(example="", say=ZH):
    """The two planning tools, in `say`'s language; `example` is a plan of the agent's task shown in
    set_plan's description (default: a generic one)."""
    def planned(steps, tool_names):
        return set_plan(steps, tool_names, say)

    def marked(index, status, plan, done_tools, note=""):
        return mark_step(index, status, plan, done_tools, note, say)
    return [
        Tool("set_plan", say("plan.set_plan", example=example or say("plan.example")), PLAN_SCHEMA, planned,
             kind="state", inline=True, takes=("tool_names",), absorb=_planned, facts=NAMESPACE, shown=PLAN_SHOWN,
             gist=lambda r: str(r.get("plan")).partition(":" if say.language == "en" else "：")[0]),
        Tool("mark_step", say("plan.mark_step"), MARK_SCHEMA, marked, kind="state", inline=True, takes=("plan", "done_tools"),
             absorb=_marked, facts=NAMESPACE, gist=lambda r: say("plan.gist_mark", index=r.get("index"),
                                                                  status=r.get("status"))),
    ]
