"""Local tools: pure functions of their arguments and of the state passed in, plus the demo
hotel system's booking store.

Invariants: no tool reads or writes run memory; whatever a tool needs (the plan, the store,
an idempotency key) is an argument. A tool returns a JSON object or raises ToolError with a
message the model can act on. The booking store enforces idempotency itself: one row per
idempotency key (SQLite UNIQUE), whatever process or thread asks.
"""
import contextlib
import datetime
import sqlite3
import time

import config


class ToolError(Exception):
    """A failure the model can act on (bad value, unknown city, sold out...)."""


CITIES = {"西安": "西安", "xi'an": "西安", "xian": "西安", "xi’an": "西安",
          "北京": "北京", "beijing": "北京", "上海": "上海", "shanghai": "上海"}
# demo forecasts: (condition, high, low) from 2026-09-28 on
FORECAST_START = datetime.date(2026, 9, 28)
FORECASTS = {
    "西安": [("clear", 25, 15), ("cloudy", 23, 14), ("clear", 24, 15), ("rain", 19, 14),
             ("clear", 22, 13), ("cloudy", 21, 12), ("rain", 18, 12), ("clear", 22, 11)],
    "北京": [("clear", 23, 12), ("clear", 24, 12), ("cloudy", 22, 11), ("clear", 23, 11),
             ("rain", 17, 10), ("clear", 20, 9), ("clear", 21, 9), ("cloudy", 19, 8)],
    "上海": [("rain", 24, 20), ("cloudy", 26, 21), ("rain", 23, 19), ("clear", 27, 20),
             ("clear", 27, 21), ("rain", 22, 19), ("cloudy", 24, 19), ("clear", 25, 18)],
}
HOTELS = {
    "西安": [{"hotel_id": "XA-001", "name": "古城墙酒店",
              "prices": {"Standard": 420, "Deluxe": 560, "Suite": 880}},
             {"hotel_id": "XA-002", "name": "大雁塔假日酒店",
              "prices": {"Standard": 380, "Deluxe": 520}},
             {"hotel_id": "XA-003", "name": "曲江国际酒店",
              "prices": {"Standard": 460, "Suite": 960}}],
    "北京": [{"hotel_id": "BJ-001", "name": "前门四合院酒店",
              "prices": {"Standard": 520, "Deluxe": 700, "Suite": 1200}}],
    "上海": [{"hotel_id": "SH-001", "name": "外滩江景酒店",
              "prices": {"Standard": 610, "Suite": 1380}}],
}
HOTEL_INDEX = {h["hotel_id"]: h for hotels in HOTELS.values() for h in hotels}
ROOM_TYPES = ["Standard", "Deluxe", "Suite"]
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
# A write runs only with the user's confirmation of what it will do. These are the arguments that
# define a write's effect (the proposal shown to the user, the booking the idempotency key
# stands for), each with how a proposal in words states it: "id" (the value, or the name of
# the record it names), "choice" (the value or an alias), "date", "count" (of nights).
WRITE_EFFECTS = {"book_hotel": (("hotel_id", "id"), ("room_type", "choice"), ("check_in", "date"), ("nights", "count"))}
ALIASES = {"Standard": ("标准间", "标准房", "标间", "标准双床房", "标准大床房"), "Deluxe": ("豪华间", "豪华房"),
           "Suite": ("套房", "套间")}

SCHEMAS = {
    "set_plan": {
        "description": ("制定或替换整个计划。每一步只有三个字段：title（标题），tool（这一步要用的工具名，可省略），"
                        "after（这一步依赖的、排在它前面的步骤编号，从 1 开始；不依赖别的步骤就不写）。"
                        "工具参数不写在计划里。例：{\"steps\": [{\"title\": \"查天气\", \"tool\": \"get_weather\"}, "
                        "{\"title\": \"搜酒店\", \"tool\": \"search_hotels\"}, "
                        "{\"title\": \"预订\", \"tool\": \"book_hotel\", \"after\": [1, 2]}]}"),
        "parameters": {"type": "object", "additionalProperties": False, "required": ["steps"],
                       "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": 12, "items": {
                           "type": "object", "additionalProperties": False, "required": ["title"],
                           "properties": {
                               "title": {"type": "string", "minLength": 1, "maxLength": 200},
                               "tool": {"type": "string", "maxLength": 64},
                               "after": {"type": "array", "maxItems": 12,
                                         "items": {"type": "integer", "minimum": 1, "maximum": 12}}}}}}}},
    "mark_step": {
        "description": "记录计划中某一步的状态（done 或 failed），可附说明。",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["index", "status"],
                       "properties": {"index": {"type": "integer", "minimum": 1, "maximum": 12},
                                      "status": {"type": "string", "enum": ["done", "failed"]},
                                      "note": {"type": "string", "maxLength": 500}}}},
    "get_weather": {
        "description": "查询某城市某天的天气预报。condition 为 rain、clear、cloudy 等。",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "date"],
                       "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "date": {"type": "string", "pattern": DATE}}}},
    "search_hotels": {
        "description": "搜索某城市可入住的酒店，返回 hotel_id、名称和各房型每晚价格。",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "check_in"],
                       "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "check_in": {"type": "string", "pattern": DATE},
                                      "nights": {"type": "integer", "minimum": 1, "maximum": 14}}}},
    "book_hotel": {
        "description": "预订酒店（写操作，需要用户确认）。hotel_id 必须来自 search_hotels 的结果。",
        "parameters": {"type": "object", "additionalProperties": False,
                       "required": ["hotel_id", "room_type", "check_in", "nights"],
                       "properties": {"hotel_id": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "room_type": {"type": "string", "enum": ROOM_TYPES},
                                      "check_in": {"type": "string", "pattern": DATE},
                                      "nights": {"type": "integer", "minimum": 1, "maximum": 14}}}},
}


def _date(text):
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise ToolError(f"日期 {text} 不存在，请用 YYYY-MM-DD 格式的真实日期") from None


def _city(name):
    city = CITIES.get(name.strip().lower())
    if city is None:
        raise ToolError(f"演示数据里没有城市 {name}；可用：西安、北京、上海")
    return city


def set_plan(steps, tool_names):
    """The plan as given, checked: known tools, dependencies only on earlier steps."""
    plan, problems = [], []
    for index, step in enumerate(steps, 1):
        tool, after = step.get("tool"), sorted(set(step.get("after", [])))
        field = f"arguments.steps[{index - 1}]"
        if tool is not None and tool not in tool_names:
            problems.append(f"{field}.tool={tool!r} 不是可用的工具；可用：{', '.join(sorted(tool_names))}")
        wrong = [dep for dep in after if dep >= index]
        if wrong:
            fix = "第 1 步前面没有步骤，请删掉它的 after" if index == 1 else \
                f"只能写 1 到 {index - 1}，或删掉 after"
            problems.append(f"{field}.after={after} 不对：after 写的是第 {index} 步依赖的、排在它前面的步骤编号，"
                            f"不能是 {wrong}；{fix}")
        plan.append({"index": index, "title": step["title"], "tool": tool, "after": after})
    if problems:
        raise ToolError("；".join(problems))
    return {"plan": plan}


def mark_step(index, status, plan, note=""):
    if not plan:
        raise ToolError("还没有计划，请先调用 set_plan")
    if index > len(plan):
        raise ToolError(f"计划只有 {len(plan)} 步，没有第 {index} 步")
    return {"index": index, "title": plan[index - 1]["title"], "status": status, "note": note}


def get_weather(city, date):
    city, day = _city(city), _date(date)
    offset = (day - FORECAST_START).days
    table = FORECASTS[city]
    if not 0 <= offset < len(table):
        last = FORECAST_START + datetime.timedelta(days=len(table) - 1)
        raise ToolError(f"演示数据只有 {FORECAST_START} 至 {last} 的天气预报")
    condition, high, low = table[offset]
    return {"city": city, "date": date, "condition": condition, "high": high, "low": low}


def search_hotels(city, check_in, nights=1):
    city = _city(city)
    _date(check_in)
    return {"city": city, "check_in": check_in, "nights": nights,
            "hotels": [dict(h, prices=dict(h["prices"])) for h in HOTELS[city]]}


def book_hotel(store, idempotency_key, run_id, hotel_id, room_type, check_in, nights):
    """Book through the store; the same key always yields the same single booking."""
    hotel = HOTEL_INDEX.get(hotel_id)
    if hotel is None:
        raise ToolError(f"酒店 {hotel_id} 不存在")
    if room_type not in hotel["prices"]:
        raise ToolError(f"{hotel['name']} 没有 {room_type} 房型；有：{', '.join(hotel['prices'])}")
    _date(check_in)
    booking = {"booking_id": "BK-" + idempotency_key[:12].upper(), "hotel_id": hotel_id,
               "hotel_name": hotel["name"], "room_type": room_type, "check_in": check_in,
               "nights": nights, "total": hotel["prices"][room_type] * nights}
    return store.book(idempotency_key, run_id, booking)


class BookingStore:
    """The demo hotel system's bookings: SQLite, one row per idempotency key."""

    COLUMNS = ("booking_id", "hotel_id", "hotel_name", "room_type", "check_in", "nights", "total")

    SCHEMA = ("CREATE TABLE IF NOT EXISTS bookings (idempotency_key TEXT NOT NULL UNIQUE,"
              " run_id TEXT NOT NULL, booking_id TEXT NOT NULL, hotel_id TEXT NOT NULL,"
              " hotel_name TEXT NOT NULL, room_type TEXT NOT NULL, check_in TEXT NOT NULL,"
              " nights INTEGER NOT NULL, total INTEGER NOT NULL, created REAL NOT NULL)")

    BUSY_TIMEOUT = 5.0              # seconds to wait for another process's lock on the database

    def __init__(self, path):
        self.path = str(path)       # the database is touched only when a booking is made or looked up

    @contextlib.contextmanager
    def _connect(self):
        """One short connection: committed on success, always closed."""
        db = sqlite3.connect(self.path, timeout=self.BUSY_TIMEOUT)
        try:
            with db:
                db.execute(self.SCHEMA)
                yield db
        finally:
            db.close()

    def book(self, key, run_id, booking):
        """Insert unless the key exists; return the stored booking, `replayed` if it existed."""
        row = [booking[c] for c in self.COLUMNS]
        try:
            with self._connect() as db:
                cursor = db.execute(
                    f"INSERT OR IGNORE INTO bookings (idempotency_key, run_id, {', '.join(self.COLUMNS)},"
                    " created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [key, run_id, *row, time.time()])
                inserted = cursor.rowcount == 1
        except sqlite3.Error as exc:
            raise ToolError(f"酒店系统暂时不可用（{exc}），预订未完成；可用相同参数重试") from None
        config.fault("after_commit")
        stored = self.find(key)
        return dict(stored, replayed=not inserted)

    def find(self, key):
        """The booking stored under this key, or None."""
        try:
            with self._connect() as db:
                row = db.execute(f"SELECT {', '.join(self.COLUMNS)} FROM bookings"
                                 " WHERE idempotency_key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise ToolError(f"酒店系统暂时不可用（{exc}），无法查询预订；稍后可用相同参数重试") from None
        return None if row is None else dict(zip(self.COLUMNS, row))

    def count(self, run_id=None):
        with self._connect() as db:
            if run_id is None:
                return db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0]
            return db.execute("SELECT COUNT(*) FROM bookings WHERE run_id = ?", (run_id,)).fetchone()[0]
