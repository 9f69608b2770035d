"""The planning tools every tool set has: `set_plan` and `mark_step`, declared like any tool.

Invariants: pure functions of their arguments and the state passed in (the current plan, the
names of the run's tools); a plan step depends only on steps before it; both keep their facts
in the namespace "plan" (`steps`, `marks`), the only facts the loop's layers read by name, as
the plan is the loop's own (plan first, plan order, step status).
"""
from calls import Tool, ToolError

NAMESPACE = "plan"


def steps_of(steps):
    """A plan's steps as memory keeps them: [{"index" (1-based), "title", "tool", "after" (sorted,
    no repeats)}]."""
    return [{"index": index, "title": step["title"], "tool": step.get("tool"), "after": sorted(set(step.get("after", [])))}
            for index, step in enumerate(steps, 1)]


def set_plan(steps, tool_names):
    """The plan as given, checked: known tools, dependencies only on earlier steps; every problem
    names the field to fix. The result tells the model only what it did not write itself: that the
    plan stands, and each step's number (what `after` and mark_step refer to); memory takes the
    steps from the call's arguments."""
    plan, problems = steps_of(steps), []
    for step in plan:
        index, tool, after = step["index"], step["tool"], step["after"]
        field = f"arguments.steps[{index - 1}]"
        if tool is not None and tool not in tool_names:
            problems.append(f"{field}.tool={tool!r} 不是可用的工具；可用：{', '.join(sorted(tool_names))}")
        wrong = [dep for dep in after if dep >= index]
        if wrong:
            fix = "第 1 步前面没有步骤，请删掉它的 after" if index == 1 else f"只能写 1 到 {index - 1}，或删掉 after"
            problems.append(f"{field}.after={after} 不对：after 写的是第 {index} 步依赖的、排在它前面的步骤编号，"
                            f"不能是 {wrong}；{fix}")
    if problems:
        raise ToolError("；".join(problems))
    return {"plan": f"已记录 {len(plan)} 步：" + "；".join(f"{s['index']} {s['title']}" for s in plan)}


def mark_step(index, status, plan, note=""):
    """The step marked, named by its number and title (the note is the model's own: not echoed)."""
    if not plan:
        raise ToolError("还没有计划，请先调用 set_plan")
    if index > len(plan):
        raise ToolError(f"计划只有 {len(plan)} 步，没有第 {index} 步")
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
MARK_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["index", "status"],
               "properties": {"index": {"type": "integer", "minimum": 1, "maximum": 12},
                              "status": {"type": "string", "enum": ["done", "failed"]},
                              "note": {"type": "string", "maxLength": 500}}}


def tools(example):
    """The two planning tools; `example` is a plan of this task shown in set_plan's description."""
    return [
        Tool("set_plan", "制定或替换整个计划。每步只有三个字段：title（标题）；tool（这一步用的工具名，可省略）；"
             "after（它依赖的、排在它前面的步骤编号，从 1 开始；第 1 步和不依赖别的步骤的不写）。"
             f"工具参数不写进计划，调用工具时再给。例：{example}", PLAN_SCHEMA, set_plan, kind="state", inline=True,
             takes=("tool_names",), absorb=_planned, facts=NAMESPACE, gist=lambda r: str(r.get("plan")).partition("：")[0]),
        Tool("mark_step", "记录计划中某一步的状态（done 或 failed），可附说明。", MARK_SCHEMA, mark_step, kind="state",
             inline=True, takes=("plan",), absorb=_marked, facts=NAMESPACE,
             gist=lambda r: f"第 {r.get('index')} 步 {r.get('status')}"),
    ]
