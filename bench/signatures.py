"""The workload's five tools as typed Python functions, the form every framework reads (its
parameter schema from the signature, its description from the docstring unless overridden).
Each only forwards to workload's counted implementation; the frameworks wrap these in their own
decorators (`function_tool`, `tool`, `Tool`)."""
from bench import workload


def set_plan(steps: list[dict]) -> dict:
    """制定或替换整个计划。"""
    return workload.set_plan(steps)


def mark_step(index: int, status: str, note: str = "") -> dict:
    """记录计划中某一步的状态。"""
    return workload.mark_step(index, status, note)


def get_weather(city: str, date: str) -> dict:
    """查询某城市某天的天气预报。"""
    return workload.get_weather(city, date)


def search_hotels(city: str, check_in: str, nights: int = 1) -> dict:
    """搜索某城市可入住的酒店。"""
    return workload.search_hotels(city, check_in, nights)


def book_hotel(hotel_id: str, room_type: str, check_in: str, nights: int) -> dict:
    """预订酒店。"""
    return workload.book_hotel(hotel_id, room_type, check_in, nights)


TOOLS = (set_plan, mark_step, get_weather, search_hotels, book_hotel)
READS = (set_plan, mark_step, get_weather, search_hotels)      # all but the write
