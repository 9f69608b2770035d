"""The Xi'an agent (`xian_agent(store)`): its prompt, confirm reply, goal and tools, each tool declared
once (`declarations(store)`): pure functions of their arguments and of the state passed in, plus
the demo hotel system's booking store. The one place the Xi'an task is written down.

Invariants: no tool reads or writes run memory; whatever a tool needs (the store, an
idempotency key) is an argument. A tool returns a JSON object or raises ToolError with a
message the model can act on. Everything the loop needs to know of a tool (kind, timeout,
prerequisites, where its arguments must come from, what a write's effect is, the rule its calls keep (the room
follows the weather: `room_follows_weather`, read with the judge's own weather reading), how its result enters
memory and shows on screen) is in its declaration here, and only here. The booking store
enforces idempotency itself: one row per idempotency key (SQLite UNIQUE), whatever process or
thread asks.
"""
import contextlib
import dataclasses
import datetime
import os
import sqlite3
import sys
import time
from typing import Any

from . import audit
from . import config
from .agents import Agent
from .calls import Rule, Source, Tool, ToolError  # noqa: F401  (ToolError: what these tools raise)
from .mcp.servers import MCPServer
from .judge import weather

NAME = "xian-hotel"
CONFIRM = ("确认",)
GOAL = ("帮我订 2026-10-01 西安的酒店，住两晚。如果那天下雨就订 Suite，否则订 Standard。"
        "预订前必须先等我确认。")
INSTRUCTIONS = """你是订酒店助手，只能通过工具获取信息和下单。规则：
1. 先调用 set_plan 制定计划，步骤按 set_plan 的说明写。
2. set_plan 和互不依赖的查询（天气、酒店搜索）可以在同一轮里一起调用。
3. hotel_id 只能取自本次运行 search_hotels 的结果，不要编造。
4. 查到天气和酒店后，先不要下单：用中文向用户提出具体的预订方案——酒店名称和 hotel_id、房型、入住日期、晚数、每晚价格和总价——然后停止调用工具，等用户回复「确认」。
5. 用户回复「确认」后，按你提出的方案原样调用 book_hotel；用户要求修改时，按新要求重新提出方案。
6. 工具返回 error 时，按错误提示修正参数或调整计划，不要原样重复。
7. 预订完成后用中文给出最终答复：天气、酒店、房型、总价、订单号。"""


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
HOTELS: dict[str, list[dict[str, Any]]] = {
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
ALIASES = {"Standard": ("标准间", "标准房", "标间", "标准双床房", "标准大床房"), "Deluxe": ("豪华间", "豪华房"),
           "Suite": ("套房", "套间")}

SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "description": "查询某城市某天的天气预报。condition 为 rain、clear、cloudy 等。",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "date"],
                       "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "date": {"type": "string", "pattern": DATE, "description": "YYYY-MM-DD"}}}},
    "search_hotels": {
        "description": "搜索某城市可入住的酒店，返回 hotel_id、名称和各房型每晚价格。",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["city", "check_in"],
                       "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "check_in": {"type": "string", "pattern": DATE, "description": "YYYY-MM-DD"},
                                      "nights": {"type": "integer", "minimum": 1, "maximum": 14}}}},
    "book_hotel": {
        "description": "预订酒店（写操作，需要用户确认）。hotel_id 必须来自 search_hotels 的结果。",
        "parameters": {"type": "object", "additionalProperties": False,
                       "required": ["hotel_id", "room_type", "check_in", "nights"],
                       "properties": {"hotel_id": {"type": "string", "minLength": 1, "maxLength": 64},
                                      "room_type": {"type": "string", "enum": ROOM_TYPES},
                                      "check_in": {"type": "string", "pattern": DATE, "description": "YYYY-MM-DD"},
                                      "nights": {"type": "integer", "minimum": 1, "maximum": 14}}}},
}
PLAN_EXAMPLE = ('{"steps":[{"title":"查天气","tool":"get_weather"},{"title":"搜酒店","tool":"search_hotels"},'
                '{"title":"预订","tool":"book_hotel","after":[1,2]}]}')


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


# ---- how each tool's results enter memory and show on screen ----
def _weather(facts, args, result):
    facts["weather"] = dict(facts.get("weather", {}), **{str(result.get("date", args.get("date"))): result})


def _hotels(facts, args, result):
    hotels = dict(facts.get("hotels", {}))
    for hotel in result.get("hotels", []):
        if isinstance(hotel, dict) and isinstance(hotel.get("hotel_id"), str):
            hotels[hotel["hotel_id"]] = {"name": hotel.get("name"), "prices": hotel.get("prices", {})}
    facts["hotels"], facts["hotel_ids"] = hotels, sorted(hotels)


def _booked(facts, args, result):
    facts["booking"] = result


def _located(facts, args, result):
    facts["locations"] = [*facts.get("locations", []), result]


def _price(args, facts):
    """What the user is shown beside a booking proposal: the hotel's name, price, total."""
    hotel = facts.get("search_hotels", {}).get("hotels", {}).get(args.get("hotel_id"), {})
    price = hotel.get("prices", {}).get(args.get("room_type"))
    total = price * args["nights"] if isinstance(price, (int, float)) and isinstance(args.get("nights"), int) else None
    return {"hotel_name": hotel.get("name"), "price_per_night": price, "total": total}


def _booking(d):
    """A booking as a person reads it: a proposal (with its price) or a receipt (with its number)."""
    parts = [f"{d.get('hotel_name') or d.get('hotel_id')}（{d.get('hotel_id')}）", str(d.get("room_type")),
             f"{d.get('check_in')} 入住 {d.get('nights')} 晚"]
    parts += [f"每晚 ¥{d['price_per_night']}"] if d.get("price_per_night") is not None else []
    parts += [f"共 ¥{d.get('total')}"] + ([f"订单号 {d['booking_id']}"] if d.get("booking_id") else [])
    return " · ".join(parts) + ("（幂等重放）" if d.get("replayed") else "")


HOOKS: dict[str, dict[str, Any]] = {   # by tool name: the local tools', and the MCP tools' of the same name (get_weather, search_location)
    "get_weather": dict(absorb=_weather, gist=lambda r: f"{r.get('condition')}，最高 {r.get('high')}°",
                        render=lambda f: [f"天气 {d}：{w.get('condition')}，最高 {w.get('high')}°"
                                          for d, w in f.get("weather", {}).items()]),
    "search_location": dict(absorb=_located, gist=lambda r: f"{r.get('name')}（{r.get('latitude')}, {r.get('longitude')}）",
                            render=lambda f: [f"坐标：{p.get('name')} ({p.get('latitude')}, {p.get('longitude')})"
                                              for p in f.get("locations", [])]),
    "search_hotels": dict(absorb=_hotels, initial={"hotels": {}, "hotel_ids": []}, gist=lambda r: f"{len(r.get('hotels', []))} 家酒店：" + "、".join(
                              h.get("name", "?") for h in r.get("hotels", []) if isinstance(h, dict)),
                          render=lambda f: [f"酒店 {hid} {h['name']}：" + "，".join(f"{k} ¥{v}/晚" for k, v in
                                                                                    h["prices"].items())
                                            for hid, h in f.get("hotels", {}).items()]),
    "book_hotel": dict(absorb=_booked, describe=_price, gist=lambda r: _booking(r)),
}


# Its MCP weather server (`python -m handloop.demo.weather_server`; --mcp uses it, --mcp-server / --mcp-url say where
# else it runs): two tools in place of the local get_weather, each result cut to its fields, each failing
# when a required field is missing; the forecast's coordinates must come from search_location's result.
WEATHER_SERVER = MCPServer(
    "weather", command=(sys.executable, "-m", "handloop.demo.weather_server"), token_env="AGENT_MCP_TOKEN",
    replaces=("get_weather",), optional=True,
    tools={"search_location": {"arguments": ("city",), "fields": ("name", "latitude", "longitude", "timezone", "country"),
                               "required": ("latitude", "longitude"), **HOOKS["search_location"]},
           "get_weather": {"arguments": ("latitude", "longitude", "date"), "fields": ("date", "condition", "high", "low"),
                           "required": ("date", "condition"),
                           "sources": (Source(("latitude", "longitude"), "search_location", ("latitude", "longitude"),
                                              near=True),)}})


def xian_agent(store):
    """The Xi'an agent over the booking store `store`: Chinese, planning on, its own room-type check, its
    weather MCP server (used with --mcp). Its runs record it as "handloop.tools:agent_in" (the agent over the store of
    their audit folder)."""
    return Agent(NAME, INSTRUCTIONS, declarations(store), goal=GOAL, confirm=CONFIRM, language="zh", planning=True,
                 checks=("room_type_follows_weather",), plan_example=PLAN_EXAMPLE, mcp=(WEATHER_SERVER,),
                 module="handloop.tools:agent_in")


def agent_in(audit_dir):
    """The Xi'an agent as the command line runs it: over the demo store of `audit_dir`, with the built-in offline
    model; a run's record names it "handloop.tools:agent_in", so any program that keeps runs there (a Temporal
    worker) loads it again the way it loads any agent (parts.recorded)."""
    from .demo import offline
    agent = xian_agent(BookingStore(os.path.join(audit_dir, "bookings.db")))
    return dataclasses.replace(agent, offline=offline.respond)


def room_follows_weather(args, facts):
    """The task's rule, decided before a booking is proposed and applied by --check: the room follows the weather
    of the check-in date, rain → Suite, otherwise Standard. The weather is read as the judge's own check reads it
    (judge/weather.py): the last forecast of that date the run has; none yet: look it up first."""
    day, room = str(args.get("check_in")), args.get("room_type")
    found = weather.weather_on(day, facts.calls("get_weather"))
    if found is None:
        return f"房型要随入住日的天气而定（下雨订 Suite，否则订 Standard），但还没有 {day} 的天气：请先调用 get_weather 查 {day} 的天气。"
    condition = found[1]
    wanted = weather.room_for(condition) if condition else None
    if wanted is None or str(room).strip().lower() == wanted.lower():
        return None
    return (f"房型不对：{day} 的天气是 {condition}，任务的规则是下雨订 Suite、否则订 Standard，所以应订 {wanted}，"
            f"不是 {room}。请改用 room_type=\"{wanted}\" 再调用 book_hotel（选有 {wanted} 房型的酒店）。")


WEATHER_RULE = Rule("room_type_follows_weather", room_follows_weather)     # the judge's check of the same name


def declarations(store):
    """The task's tools: two reads and the one write, over `store` (the planning tools are the loop's)."""
    def book(idempotency_key, run_id, **args):
        return book_hotel(store, idempotency_key, run_id, **args)
    return [
        # the two reads stand for remote services: not inline, so they run together, each with a timeout
        Tool("get_weather", fn=get_weather, **SCHEMAS["get_weather"], **HOOKS["get_weather"]),
        Tool("search_hotels", fn=search_hotels, **SCHEMAS["search_hotels"], **HOOKS["search_hotels"]),
        Tool("book_hotel", fn=book, kind="write", takes=("idempotency_key", "run_id"),
             requires=("get_weather", "search_hotels"),
             sources=(Source(("hotel_id",), "search_hotels", ("hotel_id",), "hotels[]"),),
             effect=(("hotel_id", "id"), ("room_type", "choice"), ("check_in", "date"), ("nights", "count")),
             aliases=ALIASES, units={"nights": ("晚", "夜", "night")}, reconcile=lambda key: store.find(key) if store else None,
             rules=(WEATHER_RULE,),
             **SCHEMAS["book_hotel"], **HOOKS["book_hotel"]),
    ]


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
        """One short connection: committed on success, always closed. The database is a plain file this
        store made (audit.plain_file), never one a link at its name points to."""
        try:
            audit.plain_file(self.path)
        except OSError as exc:
            raise sqlite3.OperationalError(str(exc)) from None
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
