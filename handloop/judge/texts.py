"""What the offline judge says to a person, in each language an agent can have: one catalogue per language, the
same keys in each. Check names, verdict words, reasons, notes, progress, the report's lines, file errors: every
text the judge (cli/check.py, checks.py, judge/transcripts.py, judge/formats.py) shows is here. The rules build a reason as a
Said (a key and its values) and the report says it in the judged agent's language.

Invariants: imports no project module but texts/catalogue.py, the leaf that says any catalogue (the judge stands alone:
not even texts/__init__.py, the loop's catalogue); holds no logic beyond formatting; `ZH` and `EN` have exactly the same
keys and placeholders (a test checks it), and no value of `EN` holds a CJK character. A language the judge does not
know is said in Chinese (language_of).
"""
from ..texts import catalogue
from ..texts.catalogue import CJK as CJK, LANGUAGES, Catalogue     # CJK: part of this API (check_texts.CJK)

ZH = {
    # ---- separators ----
    "list.sep": "、",
    "sep.clauses": "；",
    "sep.or": " 或 ",
    # ---- the checks and the verdicts ----
    "check.plan_first": "计划先行",
    "check.no_skipped_step": "不跳步",
    "check.provenance": "参数有出处",
    "check.room_type": "房型随天气",
    "check.write_after_confirmation": "确认后才写入",
    "check.declared": "可检查的声明",
    "verdict.pass": "通过",
    "verdict.fail": "失败",
    "verdict.pending": "待定",
    "na.plan_first": "该智能体不做计划（planning 关闭）",
    "na.no_skipped_step": "该智能体不做计划，也没有声明 requires",
    "na.provenance": "该智能体没有声明 sources",
    "na.write_after_confirmation": "该智能体没有写工具",
    "declared.nothing": "该智能体没有声明任何可检查的东西（不做计划，没有 requires、sources、写工具或自己的检查），无从判断",
    "check.unknown": "该智能体声明的检查 {name!r} 评委不认识（认识的有：{known}），无从判断",
    # ---- the words of the Xi'an agent's tools and arguments (wording only: what is judged is declared) ----
    "word.get_weather": "查天气",
    "word.search_hotels": "搜酒店",
    "word.search_location": "查位置",
    "word.book_hotel": "预订",
    "word.business": "业务调用",
    "word.or": "{items}或{last}",
    "arg.hotel_id": "酒店",
    "arg.room_type": "房型",
    "arg.latitude,longitude": "坐标",
    "what.args": " {args} ",
    "steps.tools": "调用 {tools}",
    "the.tools": " {tools} 调用",
    "the.tools_bare": "{tools} 调用",
    # ---- reasons ----
    "reason.many": "{first}（共 {count} 处）",
    "reason.unanswered": "{reason}（该调用没有结果，不知道是否执行了）",
    "nothing.business": "还没有生效的业务调用，无从判断{planned}",
    "plan.before_plan": "{call} 在成功的 set_plan 之前就执行了",
    "plan.passes": "{plan} 在第一个生效的业务调用 {first} 之前制定了计划",
    "plan.planned": "（{plan} 已制定计划）",
    "skip.passes_plan": "{count} 个业务调用都在计划依赖完成后执行",
    "skip.passes": "{count} 个业务调用都在依赖完成后执行；{first} 之前已{steps}",
    "skip.nothing_some": "已有的 {count} 个业务调用都在依赖完成后执行；还没有生效的{what}，无从判断{what}是否跳步",
    "skip.nothing_none": "还没有生效的业务调用；还没有生效的{what}，无从判断{what}是否跳步",
    "skip.missing": "{call} 执行前还没有成功{steps}",
    "skip.plan": "{call} 执行时，计划第 {index} 步依赖的第 {undone} 步还没完成",
    "prov.seen": "；{count} 次 {tool} 的{what}都来自 {source}",
    "prov.passes": "{what}的 {args} {values} 都出现在之前成功的 {source} 结果里",
    "prov.passes_user": "{what}的 {args} {values} 都出现在用户自己之前的消息里",
    "prov.the_user": "用户自己的消息",
    "prov.not_seen_or_user": "{call} 的 {arg} {value} 既没有出现在用户之前自己写的消息里，也没有出现在之前任何成功的 {source} 结果里",
    "prov.not_typed": "{call} 的 {arg} {value} 没有出现在用户之前自己写的任何消息里",
    "prov.brought": "（它只出现在 {tools} 的结果里：工具带进来的文字不是用户的话）",
    "prov.nothing": "还没有生效的{what}，无从核对 {args} 的来源{seen}",
    "prov.unparseable": "{call} 的参数无法解析，无法核对 {args} 的来源",
    "prov.not_seen": "{call} 的 {arg} {value} 没有出现在之前任何成功的 {source} 结果里",
    "prov.not_from": "{call} 的{what} {values} 不来自之前任何成功的 {source} 结果",
    "prov.not_from_args": "{call} 的{what}{values} 不来自之前任何成功的 {source} 结果",
    "room.nothing": "还没有生效的预订，房型无从判断",
    "room.unparseable": "{call} 的参数无法解析，无法核对房型",
    "room.late": "（{weather} 的天气在预订之后才查，不算）",
    "room.no_weather": "{call} 订了 {room}，但预订之前没有 {day} 的天气结果，房型无从依据{late}",
    "room.unclear": "{weather} 的结果读不出 {day} 是否下雨，无法判断 {call} 订 {room} 对不对",
    "room.wrong": "{call} 订了 {room}，但 {day} 的天气是 {condition}（{weather}），应订 {wanted}",
    "room.ok": "{call} 订 {room}，{day} 天气 {condition}",
    "write.nothing": "还没有生效的{what}，无从判断{waiting}",
    "write.rejected_waiting": "；第 {turn} 轮的 {name} 被用户拒绝（「{reply}」），没有{what}",
    "write.withdrawn_waiting": "；用户回复「{reply}」，没有{what}",
    "write.waiting": "；第 {turn} 轮的提案等待用户答复",
    "write.after_rejected": "{call} 执行时，第 {turn} 轮的 {name} 已被用户拒绝（「{reply}」），之后没有新的提案和确认",
    "write.after_withdrawn": "{call} 执行时，第 {turn} 轮的提案已被用户回复「{reply}」{how}，之后没有新的提案和确认",
    "write.how_decline": "撤回",
    "write.how_change": "要求修改",
    "write.how_other": "答复（不是该智能体的确认答复之一，运行时据此撤回了提案）",
    "write.used": "{call} 执行时，用户的确认已被第 {turn} 轮的{what}用掉，没有新的提案和确认",
    "write.spent": "{call} 执行时，用户的确认已被第 {turn} 轮执行失败的{what}用掉，没有新的提案和确认",
    "write.loose": "{call} 执行前，用户对第 {turn} 轮的答复回复了「{reply}」，但那段话没有提到{what}，无法判断用户是否批准了这笔{what}",
    "write.unanswered": "{call} 执行时用户还没有确认第 {turn} 轮提出的{what}（用户还没有回复）",
    "write.before_proposal": "{call} 在提出{what}之前就执行了{when}",
    "write.proposed_later": "（第 {turn} 轮才提出{what}）",
    "write.never_proposed": "（从未提出{what}）",
    "write.question": "{call} 执行时用户还没有确认第 {turn} 轮提出的{what}：用户的回复「{reply}」是提问",
    "write.unclear": "{call} 执行前，无法判断用户的回复「{reply}」是否批准了第 {turn} 轮的提案",
    "write.differs": "{call} 的参数与用户确认的提案（第 {turn} 轮）不一致：{differs}",
    "write.ok": "{call} 在用户确认第 {turn} 轮的提案（「{reply}」）之后执行",
    "differs.unparseable": "{what}参数无法解析",
    "differs.arg": "{key} 提案为 {proposed}，执行的是 {value}",
    "differs.shown": "提案中的{what}是 {shown}，执行的是 {value}",
    "differs.unstated": "{key}={value} 不是提案写明的值",
    "differs.tool": "执行的是 {name}，用户确认的提案是 {proposed}",
    "differs.offer_tool": "文字提案写明的写操作是 {tools}，执行的是 {name}（一次确认只授权它展示过的那一个写操作）",
    "differs.unbound": "{key}={value} 既不是提案写明的，也不是由提案写明的值决定的（与它来自不同的记录）",
    "progress.no_business_call": "任务还没有走到业务调用（没有生效的{business}）",
    "progress.no_booking": "任务没有走到{write}这一步（没有生效的{write}）",
    # ---- the conversation: calls and notes ----
    "call.label": "第 {turn} 轮 {name}（{id}）",
    "call.unnamed": "（无名工具）",
    "note.agent_unreadable": "审计文件记录的 agent 读不出工具声明，按{whose}的声明评判",
    "note.whose_given": "给定的智能体",
    "note.agent_named": "追踪的 span 写明智能体是 {name}，但没有给定（--agent FILE）或记录（审计目录里它的审计文件）它的声明：按 {judged} 的声明评判",
    "note.whose_xian": "西安智能体",
    "note.unanswered": "{call} 没有对应的工具结果（结果未知）",
    "note.bad_args": "{call} 的参数无法解析：{problem}",
    "note.duplicate_id": "{call} 的调用 id 与之前一个未回答的调用重复",
    "note.invalid_call": "第 {turn} 轮有无法解析的工具调用 {name}（LangChain invalid_tool_calls），没有执行",
    "note.orphan": "第 {item} 项是没有对应调用的工具结果，已忽略",
    "note.interrupted": "{call} 的运行被中断，没有结果（结果未知）",
    "note.skipped": "已忽略 {count} 项 {kind}（与这五项检查无关）",
    "note.unbacked_read": "第 {turn} 轮的答复说已经查过了，但在它之前没有任何查询调用生效",
    "note.unbacked_write": "第 {turn} 轮的答复说已经办成了（预订、下单之类），但在它之前没有任何写操作生效",
    "args.not_text": "arguments 既不是字符串也不是对象",
    "args.not_json": "不是合法 JSON（{error}）：{text}",
    "args.not_object": "不是 JSON 对象：{text}",
    # ---- files and their shapes ----
    "format.chat": "OpenAI Chat 消息",
    "format.responses": "OpenAI Responses/Agents SDK 条目",
    "format.langchain": "LangChain 消息",
    "format.anthropic": "Anthropic Messages",
    "format.pydantic_ai": "pydantic-ai 消息",
    "format.otlp": "OpenTelemetry 追踪（OTLP JSON，GenAI 消息）",
    "file.otlp_no_messages": "{path} 是 OpenTelemetry 追踪文件，但它的 span 不带 GenAI 消息（gen_ai.input.messages / "
                             "gen_ai.output.messages）：无从检查；导出时请打开消息内容（"
                             "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true，或框架自己的开关）",
    "file.otlp_bad_messages": "{path} 是 OpenTelemetry 追踪文件，但它的 GenAI 消息形状不对，无法检查",
    "file.shapes": "应为本项目的审计快照（含 messages 的 JSON 对象）、OpenAI Chat Completions 消息数组、"
                   "OpenAI Responses/Agents SDK 条目列表（to_input_list()）、LangChain/LangGraph 消息"
                   "（messages_to_dict，或 tool_calls 为 {{name, args, id}} 的 role 字典）、Anthropic Messages"
                   "（content 为 text/tool_use/tool_result 内容块）、pydantic-ai 消息（ModelMessagesTypeAdapter："
                   "kind 为 request/response、parts 带 part_kind）、span 带 GenAI 消息的 OpenTelemetry 追踪文件（OTLP JSON），"
                   "或每行一条消息的 JSONL",
    "file.not_transcript": "{path} 不是对话记录：{shapes}",
    "file.not_transcript_item": "{path} 不是对话记录：{problem}；{shapes}",
    "file.no_said": "{path} 没有任何用户或助手消息，无从检查",
    "file.missing": "找不到文件 {path}",
    "file.directory": "{path} 是目录，不是审计文件",
    "file.unreadable": "{path} 无法读取：{error}",
    "file.too_deep": "{path} 无法读取或已损坏（JSON 嵌套过深）",
    "file.not_json": "{path} 无法读取或已损坏（不是完整的 JSON）：{error}",
    "file.bad_line": "{path} 无法读取或已损坏（JSONL 第 {line} 行不是完整的 JSON：{error}）",
    "file.empty": "{path} 没有任何消息，无从检查",
    "file.nested": "{path} 的 JSON 嵌套过深，无法检查",
    "file.no_runs": "{audit_dir} 里还没有任何运行；先运行 {cmd}，或指定 RUN_ID/文件",
    "item.unknown": "第 {index} 项不是可识别的消息（{what}）",
    "item.what_type": "类型 {kind!r}",
    "item.what_no_role": "没有 role 或 type",
    "item.what_value": "是 {kind}",
    "item.no_part_kind": "第 {index} 项的 parts 里有没有 part_kind 的部分",
    "item.part_kind": "第 {index} 项有不认识的 part_kind {kind!r}",
    "item.block": "第 {index} 项的内容块类型 {kind!r} 不认识",
    "file.bad_field": "{path} 无法检查：{field} 应为{expected}",
    "file.missing_field": "{path} 无法检查：缺少{field}",
    "field.plain": "字段 ",
    "field.item": "第 {index} 项的字段 ",
    "field.message": "，第 {index} 条 GenAI 消息的字段 ",
    "shape.text": "字符串",
    "shape.flag": " true 或 false",
    "shape.count": "整数",
    "shape.number": "有限的数",
    "shape.double": "数",
    "shape.id": "字符串或整数",
    "shape.list": "列表",
    "shape.object": "对象",
    "shape.content": "字符串、内容块列表或 null",
    "shape.part": "字符串或对象",
    "shape.or_null": "{expected}或 null",
    # ---- the report ----
    "report.error": "错误：{error}",
    "report.unreadable": "✗ {error}",
    "report.header": "检查 {path}（{facts}）",
    "report.conversation": "第 {index}/{count} 段对话",
    "report.facts_sep": " · ",
    "report.jsonl": "（JSONL）",
    "report.run": "运行 {run_id}",
    "report.agent": "智能体 {agent}",
    "report.finished": "已结束",
    "report.unfinished": "未结束",
    "report.messages": "{count} 条消息",
    "report.turns": "{count} 轮",
    "report.pad": "\u3000",
    "report.check": "  {mark} {index}. {name} {word}：{reason}",
    "report.not_applicable": "  － {name} 不适用：{reason}",
    "report.note": "  注意：{note}",
    "report.reading": "  确认的读法：{reading}",
    "reading.agent": "按该智能体的运行时规则（只有它的确认答复 {replies} 算确认；提案与写操作按它记录的声明比对）",
    "reading.wide": "较宽的读法（其他系统的记录：「好的，订吧」「sure, go ahead」之类的肯定答复也算确认）",
    "report.summary": "  小结：{passed} 项通过 · {failed} 项失败 · {pending} 项待定",
    "report.progress": " — {progress}",
    "report.pending_why": " — 有检查无法判断（见理由）",
    "report.total": "汇总：{files} 个文件 · {passed} 项通过 · {failed} 项失败 · {pending} 项待定 · {unreadable} 个无法读取 → "
                    "{conclusion}（退出码 {exit}）",
    "end.unreadable": "有文件无法读取",
    "end.failed": "有检查失败",
    "end.strict_pending": "--strict：有检查待定，任务没有完成或无法判断",
    "end.pending": "没有失败，但有检查待定：任务没有走完或无法判断（加 --strict 时退出码为 1）",
    "end.passed": "全部通过",
}

EN = {
    # ---- separators ----
    "list.sep": ", ",
    "sep.clauses": "; ",
    "sep.or": " or ",
    # ---- the checks and the verdicts ----
    "check.plan_first": "Plan first",
    "check.no_skipped_step": "No skipped step",
    "check.provenance": "Arguments have a source",
    "check.room_type": "Room type follows weather",
    "check.write_after_confirmation": "Write after confirmation",
    "check.declared": "Checkable declaration",
    "verdict.pass": "pass",
    "verdict.fail": "fail",
    "verdict.pending": "pending",
    "na.plan_first": "this agent does not plan (planning is off)",
    "na.no_skipped_step": "this agent does not plan and declares no requires",
    "na.provenance": "this agent declares no sources",
    "na.write_after_confirmation": "this agent has no write tool",
    "declared.nothing": "this agent declares nothing to check (no planning, no requires, sources, write tool or checks "
                        "of its own): nothing to judge",
    "check.unknown": "the judge does not know the check {name!r} this agent declares (it knows: {known}): nothing to "
                     "judge",
    # ---- the words of the Xi'an agent's tools and arguments (wording only: what is judged is declared) ----
    "word.get_weather": "weather lookup",
    "word.search_hotels": "hotel search",
    "word.search_location": "location lookup",
    "word.book_hotel": "booking",
    "word.business": "business call",
    "word.or": "{items} or {last}",
    "arg.hotel_id": "hotel",
    "arg.room_type": "room type",
    "arg.latitude,longitude": "coordinates",
    "what.args": "{args}",
    "steps.tools": "{tools}",
    "the.tools": "{tools} call",
    "the.tools_bare": "{tools} call",
    # ---- reasons ----
    "reason.many": "{first} ({count} in all)",
    "reason.unanswered": "{reason} (the call has no result: whether it ran is unknown)",
    "nothing.business": "no business call has taken effect yet: nothing to judge{planned}",
    "plan.before_plan": "{call} ran before a successful set_plan",
    "plan.passes": "{plan} set the plan before the first business call that took effect, {first}",
    "plan.planned": " ({plan} set a plan)",
    "skip.passes_plan": "all {count} business calls ran after their plan dependencies were done",
    "skip.passes": "all {count} business calls ran after their dependencies were done; before {first}: {steps} done",
    "skip.nothing_some": "the {count} business calls so far ran after their dependencies were done; no {what} has "
                         "taken effect yet, so whether a {what} skipped a step cannot be judged",
    "skip.nothing_none": "no business call has taken effect yet; no {what} has taken effect, so whether a {what} "
                         "skipped a step cannot be judged",
    "skip.missing": "{call} ran before {steps} had succeeded",
    "skip.plan": "when {call} ran, plan step {index} depended on steps not done yet: {undone}",
    "prov.seen": "; the {what} of {count} {tool} call(s) came from {source}",
    "prov.passes": "the {what}'s {args} {values} appeared in earlier successful {source} results",
    "prov.passes_user": "the {what}'s {args} {values} appeared in the user's own earlier messages",
    "prov.the_user": "the user's own messages",
    "prov.not_seen_or_user": "{call}: {arg} {value} appeared neither in an earlier message the user wrote nor in any earlier successful {source} result",
    "prov.not_typed": "{call}: {arg} {value} did not appear in any earlier message the user wrote",
    "prov.brought": " (it appeared only in the result of {tools}: text a tool brought in is not the user's word)",
    "prov.nothing": "no {what} has taken effect yet, so the source of {args} cannot be checked{seen}",
    "prov.unparseable": "{call}: the arguments cannot be parsed, so the source of {args} cannot be checked",
    "prov.not_seen": "{call}: {arg} {value} did not appear in any earlier successful {source} result",
    "prov.not_from": "{call}: the {what} {values} did not come from any earlier successful {source} result",
    "prov.not_from_args": "{call}: {what} {values} did not come from any earlier successful {source} result",
    "room.nothing": "no booking has taken effect yet: the room type cannot be judged",
    "room.unparseable": "{call}: the arguments cannot be parsed, so the room type cannot be checked",
    "room.late": " ({weather} looked up the weather only after the booking: it does not count)",
    "room.no_weather": "{call} booked {room}, but no weather result for {day} came before the booking to base the "
                       "room type on{late}",
    "room.unclear": "{weather}'s result does not tell whether it rains on {day}, so whether {call} was right to book "
                    "{room} cannot be judged",
    "room.wrong": "{call} booked {room}, but the weather on {day} is {condition} ({weather}): it should be {wanted}",
    "room.ok": "{call} booked {room}; weather on {day}: {condition}",
    "write.nothing": "no {what} has taken effect yet: nothing to judge{waiting}",
    "write.rejected_waiting": "; the user rejected the {name} of turn {turn} (\"{reply}\"): no {what}",
    "write.withdrawn_waiting": "; the user replied \"{reply}\": no {what}",
    "write.waiting": "; the proposal of turn {turn} awaits the user's answer",
    "write.after_rejected": "when {call} ran, the user had rejected the {name} of turn {turn} (\"{reply}\"), with no "
                            "new proposal and confirmation since",
    "write.after_withdrawn": "when {call} ran, the user had answered the proposal of turn {turn} with \"{reply}\", "
                             "{how}, with no new proposal and confirmation since",
    "write.how_decline": "withdrawing it",
    "write.how_change": "asking for a change",
    "write.how_other": "which is not one of the agent's confirm replies (its run withdrew the proposal on it)",
    "write.used": "when {call} ran, the user's confirmation had been used up by the {what} of turn {turn}, with no "
                  "new proposal and confirmation since",
    "write.spent": "when {call} ran, the user's confirmation had been spent by the {what} of turn {turn}, which "
                   "ran and failed, with no new proposal and confirmation since",
    "write.loose": "before {call} ran, the user replied \"{reply}\" to the answer of turn {turn}, but that answer did "
                   "not mention the {what}, so whether the user approved this {what} cannot be judged",
    "write.unanswered": "when {call} ran, the user had not yet confirmed the {what} proposed in turn {turn} (the user "
                        "had not replied)",
    "write.before_proposal": "{call} ran before any {what} was proposed{when}",
    "write.proposed_later": " (the {what} was proposed only in turn {turn})",
    "write.never_proposed": " (no {what} was ever proposed)",
    "write.question": "when {call} ran, the user had not confirmed the {what} proposed in turn {turn}: the reply "
                      "\"{reply}\" is a question",
    "write.unclear": "before {call} ran: whether the user's reply \"{reply}\" approved the proposal of turn {turn} "
                     "cannot be judged",
    "write.differs": "{call}'s arguments differ from the proposal the user confirmed (turn {turn}): {differs}",
    "write.ok": "{call} ran after the user confirmed the proposal of turn {turn} (\"{reply}\")",
    "differs.unparseable": "the {what}'s arguments cannot be parsed",
    "differs.arg": "{key} was proposed as {proposed}, but {value} was used",
    "differs.shown": "the proposal's {what} was {shown}, but {value} was used",
    "differs.unstated": "{key}={value} is not what the proposal stated",
    "differs.tool": "{name} ran, but the proposal the user confirmed was {proposed}",
    "differs.offer_tool": "the proposal in words stated {tools}, but {name} ran (a confirmation authorises only the "
                          "one write it showed)",
    "differs.unbound": "{key}={value} was neither stated by the proposal nor determined by what it stated (another "
                       "record than its value's)",
    "progress.no_business_call": "the task has not reached a business call yet (no {business} took effect)",
    "progress.no_booking": "the task did not reach the {write} step (no {write} took effect)",
    # ---- the conversation: calls and notes ----
    "call.label": "turn {turn} {name} ({id})",
    "call.unnamed": "(unnamed tool)",
    "note.agent_unreadable": "the agent the audit file records has no readable tool declarations; judged by {whose}'s "
                             "declarations",
    "note.whose_given": "the given agent",
    "note.agent_named": "the trace's spans name the agent {name}, but no declaration of it is given (--agent FILE) or "
                        "recorded (its audit file in the audit dir): judged by {judged}'s",
    "note.whose_xian": "the Xi'an agent",
    "note.unanswered": "{call} has no tool result (outcome unknown)",
    "note.bad_args": "{call}: the arguments cannot be parsed: {problem}",
    "note.duplicate_id": "{call} repeats the call id of an earlier unanswered call",
    "note.invalid_call": "turn {turn} has a tool call {name} that could not be parsed (LangChain invalid_tool_calls); "
                         "it did not run",
    "note.orphan": "item {item} is a tool result that answers no call; ignored",
    "note.interrupted": "{call} was interrupted and has no result (outcome unknown)",
    "note.skipped": "ignored {count} item(s) of type {kind} (nothing to do with these checks)",
    "note.unbacked_read": "turn {turn}'s answer says things were looked up, but no lookup call had taken effect before it",
    "note.unbacked_write": "turn {turn}'s answer says it was done (booked, ordered...), but no write had taken effect before it",
    "args.not_text": "arguments is neither a string nor an object",
    "args.not_json": "not valid JSON ({error}): {text}",
    "args.not_object": "not a JSON object: {text}",
    # ---- files and their shapes ----
    "format.chat": "OpenAI Chat messages",
    "format.responses": "OpenAI Responses/Agents SDK items",
    "format.langchain": "LangChain messages",
    "format.anthropic": "Anthropic Messages",
    "format.pydantic_ai": "pydantic-ai messages",
    "format.otlp": "OpenTelemetry trace (OTLP JSON, GenAI messages)",
    "file.otlp_no_messages": "{path} is an OpenTelemetry trace file, but its spans carry no GenAI messages "
                             "(gen_ai.input.messages / gen_ai.output.messages): nothing to check; export with message "
                             "content on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, or the framework's "
                             "own switch)",
    "file.otlp_bad_messages": "{path} is an OpenTelemetry trace file, but its GenAI messages are malformed",
    "file.shapes": "expected this project's audit snapshot (a JSON object with messages), an OpenAI Chat Completions "
                   "message array, an OpenAI Responses/Agents SDK item list (to_input_list()), LangChain/LangGraph "
                   "messages (messages_to_dict, or role dicts whose tool_calls are {{name, args, id}}), Anthropic "
                   "Messages (content of text/tool_use/tool_result blocks), pydantic-ai messages "
                   "(ModelMessagesTypeAdapter: kind request/response, parts with part_kind), an OpenTelemetry trace file "
                   "(OTLP JSON) whose spans carry GenAI messages, or JSONL with one message a line",
    "file.not_transcript": "{path} is not a conversation: {shapes}",
    "file.not_transcript_item": "{path} is not a conversation: {problem}; {shapes}",
    "file.no_said": "{path} has no user or assistant message: nothing to check",
    "file.missing": "file not found: {path}",
    "file.directory": "{path} is a directory, not an audit file",
    "file.unreadable": "{path} cannot be read: {error}",
    "file.too_deep": "{path} cannot be read or is corrupt (JSON nested too deeply)",
    "file.not_json": "{path} cannot be read or is corrupt (not complete JSON): {error}",
    "file.bad_line": "{path} cannot be read or is corrupt (JSONL line {line} is not complete JSON: {error})",
    "file.empty": "{path} holds no message: nothing to check",
    "file.nested": "{path}: the JSON is nested too deeply to check",
    "file.no_runs": "{audit_dir} holds no run yet; run {cmd} first, or name a RUN_ID or a file",
    "item.unknown": "item {index} is not a message of a known shape ({what})",
    "item.what_type": "type {kind!r}",
    "item.what_no_role": "no role or type",
    "item.what_value": "a {kind}",
    "item.no_part_kind": "item {index} has a part without part_kind in its parts",
    "item.part_kind": "item {index} has an unknown part_kind {kind!r}",
    "item.block": "item {index} has an unknown content block type {kind!r}",
    "file.bad_field": "{path} cannot be checked: {field} must be {expected}",
    "file.missing_field": "{path} cannot be checked: {field} is missing",
    "field.plain": "the field ",
    "field.item": "item {index}'s field ",
    "field.message": ", GenAI message {index}'s field ",
    "shape.text": "text",
    "shape.flag": "true or false",
    "shape.count": "a whole number",
    "shape.number": "a finite number",
    "shape.double": "a number",
    "shape.id": "text or a whole number",
    "shape.list": "a list",
    "shape.object": "an object",
    "shape.content": "text, a list of content parts or null",
    "shape.part": "text or an object",
    "shape.or_null": "{expected} or null",
    # ---- the report ----
    "report.error": "error: {error}",
    "report.unreadable": "✗ {error}",
    "report.header": "check {path} ({facts})",
    "report.conversation": "conversation {index} of {count}",
    "report.facts_sep": " · ",
    "report.jsonl": " (JSONL)",
    "report.run": "run {run_id}",
    "report.agent": "agent {agent}",
    "report.finished": "finished",
    "report.unfinished": "unfinished",
    "report.messages": "{count} messages",
    "report.turns": "{count} turns",
    "report.pad": " ",
    "report.check": "  {mark} {index}. {name} {word}: {reason}",
    "report.not_applicable": "  - {name} not applicable: {reason}",
    "report.note": "  note: {note}",
    "report.reading": "  confirmations read: {reading}",
    "reading.agent": "as this agent's runtime reads them (only its confirm replies {replies} confirm; proposals and "
                     "writes compared by its recorded declaration)",
    "reading.wide": "the wider reading (another system's transcript: an approval such as \"sure, go ahead\" confirms too)",
    "report.summary": "  summary: {passed} passed · {failed} failed · {pending} pending",
    "report.progress": " — {progress}",
    "report.pending_why": " — some checks cannot be judged (see the reasons)",
    "report.total": "total: {files} file(s) · {passed} passed · {failed} failed · {pending} pending · {unreadable} "
                    "unreadable → {conclusion} (exit code {exit})",
    "end.unreadable": "a file cannot be read",
    "end.failed": "a check failed",
    "end.strict_pending": "--strict: a check is pending: the task is unfinished or cannot be judged",
    "end.pending": "nothing failed, but a check is pending: the task did not finish or cannot be judged (with "
                   "--strict the exit code is 1)",
    "end.passed": "all passed",
}

CATALOGUE = Catalogue({"zh": ZH, "en": EN}, fallback="zh")    # a language the judge does not know: Chinese
of = CATALOGUE.of
ZH_TEXTS = of("zh")


class Said(catalogue.Said):
    """A judge's text not said yet (catalogue.Said): str() says it in the judge's Chinese. The rules' reasons,
    the notes and Unreadable's message are Said."""

    home = ZH_TEXTS


class Joined(catalogue.Joined):
    """Judge's texts said one after another (catalogue.Joined): str() says them in the judge's Chinese."""

    home = ZH_TEXTS


def language_of(declared):
    """The language a declaration (a plain dict) declares, when the judge knows it; else Chinese."""
    language = declared.get("language") if isinstance(declared, dict) else None
    return language if language in LANGUAGES else "zh"
