#!/usr/bin/env python3
"""odd_server: codemcp's own upstream MCP server for integration tests.

Runs under both PyPI `mcp` 2.x (`mcp.server.mcpserver.MCPServer`) and 1.x
(`mcp.server.fastmcp.FastMCP`); whichever is installed is used.

    python odd_server.py                 # stdio (default)
    python odd_server.py --http 8931     # Streamable HTTP on http://127.0.0.1:8931/mcp
    python odd_server.py --dump-catalog  # print the generated catalog (ODD_TOOLS=N) as JSON

Environment:
    ODD_LOG_LEVEL=WARNING  the SDK's log level (logs go to stderr; uvicorn's access log is off below WARNING)
    ODD_SCHEMAS=1 add tools whose parameters are pydantic unions, Optional lists, nested, recursive and Literal types
    ODD_TOOLS=N   add N generated, realistic tools (deterministic; see catalog_queries.json)

The tools deliberately cover awkward shapes: dotted/camelCase/MixedCase names,
Python keywords as parameter names, `$defs`/`$ref`, enums, nullable `anyOf`,
structured output, huge and slow results, errors, crashes and runtime tool-list
changes.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import random
import sys
from typing import Annotated, Any, Literal, Optional

import anyio
from pydantic import BaseModel, Field, create_model

try:  # mcp >= 2
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _ServerClass
    from mcp.server.mcpserver.exceptions import ToolError

    MCP_MAJOR = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as _ServerClass  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

    MCP_MAJOR = 1

from mcp.server.lowlevel import NotificationOptions
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)
MUTATING = ToolAnnotations(readOnlyHint=False)


def log(msg: str) -> None:
    print(f"odd_server[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


def make_server(http_port: int | None = None) -> Any:
    kwargs: dict[str, Any] = {
        "instructions": "Test server for codemcp: odd names, odd schemas, odd behaviour.",
        "log_level": os.environ.get("ODD_LOG_LEVEL", "WARNING"),
    }
    if MCP_MAJOR == 1 and http_port is not None:
        kwargs.update(host="127.0.0.1", port=http_port)
    server = _ServerClass("odd", **kwargs)
    # Advertise tools.listChanged to legacy (initialize-era) clients: the
    # high-level servers do not expose NotificationOptions, so default it here.
    low = getattr(server, "_lowlevel_server", None) or getattr(server, "_mcp_server")
    orig = low.create_initialization_options

    def create_initialization_options(notification_options=None, *args: Any, **kw: Any):
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=True)
        return orig(notification_options, *args, **kw)

    low.create_initialization_options = create_initialization_options
    return server


# --------------------------------------------------------------------------
# Hand-written tools
# --------------------------------------------------------------------------


class UserProfile(BaseModel):
    id: int
    name: str
    email: Optional[str] = None


class DateRange(BaseModel):
    start: str = Field(description="ISO date, inclusive (YYYY-MM-DD)")
    end: Optional[str] = Field(default=None, description="ISO date, inclusive; open-ended when null")


class CustomerRef(BaseModel):
    customer_id: Optional[int] = None
    email_domain: Optional[str] = Field(default=None, description="e.g. 'example.com'")


class OrderFilter(BaseModel):
    customer: Optional[CustomerRef] = None
    placed: Optional[DateRange] = None
    min_total: float = 0.0
    tags: list[str] = Field(default_factory=list)


class Order(BaseModel):
    id: str
    customer_id: int
    email: str
    placed: str
    total: float
    status: str
    tags: list[str]


FAKE_ORDERS = [
    Order(id="ord-1001", customer_id=7, email="ada@example.com", placed="2026-01-03", total=19.5, status="open", tags=["gift"]),
    Order(id="ord-1002", customer_id=7, email="ada@example.com", placed="2026-02-11", total=250.0, status="shipped", tags=[]),
    Order(id="ord-1003", customer_id=9, email="bob@corp.test", placed="2026-02-20", total=75.25, status="open", tags=["b2b", "rush"]),
    Order(id="ord-1004", customer_id=12, email="cy@example.com", placed="2026-03-02", total=5.0, status="cancelled", tags=[]),
    Order(id="ord-1005", customer_id=9, email="bob@corp.test", placed="2026-03-15", total=1200.0, status="open", tags=["b2b"]),
]

class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float


class Square(BaseModel):
    kind: Literal["square"]
    side: float


class TreeNode(BaseModel):
    name: str
    children: list[TreeNode] = Field(default_factory=list)


_counter = 0


def register_fixed_tools(server: Any) -> None:
    @server.tool(name="v2.lookup", description="Look up a value by key (dotted tool name).", annotations=READ_ONLY)
    def lookup(key: str) -> str:
        return f"value-of-{key}"

    @server.tool(name="fetchUserProfile", description="Fetch a user's profile (camelCase name and parameters, structured output).", annotations=READ_ONLY)
    def fetch_user_profile(userId: int, includeEmail: bool = False) -> UserProfile:
        return UserProfile(id=userId, name=f"User {userId}", email=f"user{userId}@example.com" if includeEmail else None)

    @server.tool(name="Send_Email", description="Send an email (MixedCase name, has side effects).", annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
    def send_email(to: str, subject: str, body: str = "") -> str:
        return f"sent to {to}"

    # FastMCP validates arguments by alias and then calls the function with the
    # alias names (`class=`, `from=`), which no Python signature can declare; so
    # the function takes **kwargs and a __signature__ gives the schema.
    def class_info(**kw: Any) -> str:
        return f"class={kw['class']} from={kw['from']}"

    class_info.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("class_", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[str, Field(alias="class", description="a class name")]),
            inspect.Parameter("from_", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[int, Field(alias="from", description="a starting index")]),
        ],
        return_annotation=str,
    )
    server.add_tool(class_info, name="class_info", description="Parameters named after Python keywords: `class` and `from`.", annotations=READ_ONLY)

    @server.tool(name="search_orders", description="Search fake orders with a nested filter ($defs/$ref), an enum and a nullable string.", annotations=READ_ONLY)
    def search_orders(
        filter: OrderFilter,
        status: Literal["open", "shipped", "cancelled"] = "open",
        note: str | None = None,
    ) -> list[Order]:
        out = []
        for o in FAKE_ORDERS:
            if o.status != status or o.total < filter.min_total:
                continue
            if filter.tags and not set(filter.tags) & set(o.tags):
                continue
            c = filter.customer
            if c and c.customer_id is not None and o.customer_id != c.customer_id:
                continue
            if c and c.email_domain and not o.email.endswith("@" + c.email_domain):
                continue
            p = filter.placed
            if p and (o.placed < p.start or (p.end is not None and o.placed > p.end)):
                continue
            out.append(o)
        return out

    @server.tool(name="add_numbers", description="Add two numbers.", annotations=READ_ONLY)
    def add_numbers(a: float, b: float) -> float:
        return a + b

    @server.tool(name="slow", description="Sleep asynchronously for `ms` milliseconds.", annotations=READ_ONLY)
    async def slow(ms: int) -> str:
        await anyio.sleep(ms / 1000.0)
        return f"slept {ms}"

    @server.tool(name="fail", description="Always fails: the result has isError true and carries the message.", annotations=READ_ONLY)
    def fail(message: str = "boom") -> str:
        raise ToolError(message)

    @server.tool(name="echo_json", description="Return the given JSON value unchanged.", annotations=READ_ONLY)
    def echo_json(value: Any):
        return value

    @server.tool(name="big_result", description="Return a text result of exactly `kb` KiB.", annotations=READ_ONLY)
    def big_result(kb: int) -> str:
        line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-=\n"  # 64 bytes
        n = kb * 1024
        return (line * (n // len(line) + 1))[:n]

    @server.tool(name="counter", description="Return an integer that increments on every call (process state).", annotations=MUTATING)
    def counter() -> int:
        global _counter
        _counter += 1
        return _counter

    @server.tool(name="add_tool", description="Register a new tool named `name` at runtime (it returns its own name) and notify clients that the tool list changed.", annotations=MUTATING)
    async def add_tool(name: str, ctx: Context) -> str:
        def dynamic() -> str:
            return name

        server.add_tool(dynamic, name=name, description=f"Added at runtime by add_tool({name!r}).", annotations=READ_ONLY)
        sent = []
        # 2026-07-28 era: change events go to subscriptions/listen streams.
        notify = getattr(ctx, "notify_tools_changed", None)
        if notify is not None:
            try:
                await notify()
                sent.append("listen")
            except Exception as e:  # noqa: BLE001
                log(f"notify_tools_changed failed: {e!r}")
        # initialize era: a plain notifications/tools/list_changed on the session
        # (dropped by the SDK on modern connections, where the bus is used).
        try:
            await ctx.session.send_tool_list_changed()
            sent.append("session")
        except Exception as e:  # noqa: BLE001
            log(f"send_tool_list_changed failed: {e!r}")
        log(f"added tool {name!r}, notified via {sent}")
        return name

    @server.tool(name="crash", description="Exit the server process immediately (simulates an upstream dying).", annotations=MUTATING)
    def crash() -> str:
        log("crash requested: exiting")
        sys.stderr.flush()
        os._exit(1)

    @server.tool(name="pid", description="Return the server's process id.", annotations=READ_ONLY)
    def pid() -> int:
        return os.getpid()


def register_schema_tools(server: Any) -> None:
    """Parameters as pydantic publishes them: unions, Optional, nested and
    recursive models, literals (ODD_SCHEMAS=1; kept out of the default
    catalog so the snapshots of what the model sees stay as they are)."""

    @server.tool(name="describe_regions", description="Echo the regions received (pydantic `list[str] | None`: anyOf with null).", annotations=READ_ONLY)
    def describe_regions(regions: list[str] | None = None) -> str:
        return json.dumps(regions)

    @server.tool(name="draw", description="Area of a shape (a discriminated union: oneOf with a const `kind`).", annotations=READ_ONLY)
    def draw(shape: Annotated[Circle | Square, Field(discriminator="kind")]) -> float:
        return 3.14159 * shape.radius**2 if isinstance(shape, Circle) else shape.side**2

    @server.tool(name="count_nodes", description="Count the nodes of a tree (a recursive model).", annotations=READ_ONLY)
    def count_nodes(tree: TreeNode) -> int:
        return 1 + sum(count_nodes(child) for child in tree.children)

    @server.tool(name="tune", description="Echo a mode (a Literal) and a value (a union with None).", annotations=READ_ONLY)
    def tune(mode: Literal["fast", "slow"] = "fast", value: int | str | None = None) -> str:
        return f"{mode}:{value!r}"


# --------------------------------------------------------------------------
# Generated catalog (ODD_TOOLS=N)
# --------------------------------------------------------------------------

# Each domain: entity -> (plural, statuses, fields, domain-specific verbs).
# A field is (name, kind) with kind in: str, int, float, bool, date, email,
# money, enum:<a|b|c>, list, obj:<Model>.
DOMAINS: dict[str, dict[str, tuple]] = {
    "billing": {
        "invoice": ("invoices", ["draft", "open", "paid", "void"], [("customer_id", "str"), ("amount", "money"), ("currency", "enum:usd|eur|gbp|jpy"), ("due_date", "date"), ("memo", "str"), ("line_items", "obj:LineItem")], ["refund", "void", "send_reminder", "finalize"]),
        "subscription": ("subscriptions", ["trialing", "active", "past_due", "canceled"], [("customer_id", "str"), ("plan_id", "str"), ("quantity", "int"), ("trial_days", "int"), ("billing_cycle", "enum:monthly|quarterly|yearly")], ["cancel", "pause", "change_plan"]),
        "coupon": ("coupons", ["active", "expired"], [("code", "str"), ("percent_off", "float"), ("max_redemptions", "int"), ("expires_on", "date")], ["apply"]),
        "payment_method": ("payment_methods", ["valid", "expired"], [("customer_id", "str"), ("card_brand", "enum:visa|mastercard|amex"), ("last4", "str"), ("is_default", "bool")], ["set_default"]),
    },
    "calendar": {
        "event": ("events", ["confirmed", "tentative", "cancelled"], [("title", "str"), ("start_time", "date"), ("end_time", "date"), ("attendees", "list"), ("location", "obj:Location"), ("visibility", "enum:public|private|default")], ["reschedule", "rsvp", "invite"]),
        "calendar": ("calendars", ["active", "hidden"], [("name", "str"), ("timezone", "str"), ("color", "enum:red|blue|green|purple"), ("owner_email", "email")], ["share"]),
        "reminder": ("reminders", ["pending", "sent"], [("event_id", "str"), ("minutes_before", "int"), ("method", "enum:email|popup|sms")], ["snooze"]),
        "availability": ("availabilities", ["free", "busy"], [("user_email", "email"), ("window", "obj:TimeWindow"), ("granularity_minutes", "int")], ["find_slot"]),
    },
    "crm": {
        "contact": ("contacts", ["lead", "customer", "churned"], [("first_name", "str"), ("last_name", "str"), ("email", "email"), ("phone", "str"), ("company_id", "str"), ("address", "obj:Address")], ["merge", "tag"]),
        "deal": ("deals", ["prospecting", "negotiation", "won", "lost"], [("name", "str"), ("value", "money"), ("stage", "enum:prospecting|qualified|proposal|negotiation|closed"), ("owner_id", "str"), ("close_date", "date")], ["move_stage", "mark_won", "mark_lost"]),
        "company": ("companies", ["active", "inactive"], [("name", "str"), ("domain", "str"), ("industry", "enum:saas|retail|finance|health|education"), ("employee_count", "int"), ("address", "obj:Address")], ["enrich"]),
        "note": ("notes", ["visible", "pinned"], [("contact_id", "str"), ("body", "str"), ("pinned", "bool")], ["pin"]),
    },
    "github": {
        "issue": ("issues", ["open", "closed"], [("repo", "str"), ("title", "str"), ("body", "str"), ("labels", "list"), ("assignee", "str"), ("milestone", "int")], ["close", "reopen", "label", "lock"]),
        "pull_request": ("pull_requests", ["open", "closed", "merged"], [("repo", "str"), ("head", "str"), ("base", "str"), ("title", "str"), ("draft", "bool")], ["merge", "request_review", "approve"]),
        "repository": ("repositories", ["public", "private", "archived"], [("owner", "str"), ("name", "str"), ("visibility", "enum:public|private|internal"), ("default_branch", "str")], ["fork", "star", "transfer"]),
        "workflow_run": ("workflow_runs", ["queued", "in_progress", "completed"], [("repo", "str"), ("workflow", "str"), ("branch", "str"), ("inputs", "obj:KeyValues")], ["rerun", "cancel"]),
    },
    "weather": {
        "forecast": ("forecasts", ["current"], [("location", "obj:GeoPoint"), ("days", "int"), ("units", "enum:metric|imperial"), ("include_hourly", "bool")], ["compare"]),
        "alert": ("alerts", ["active", "expired"], [("region", "str"), ("severity", "enum:minor|moderate|severe|extreme"), ("kind", "enum:storm|flood|heat|wind|snow")], ["subscribe"]),
        "observation": ("observations", ["verified", "raw"], [("station_id", "str"), ("window", "obj:TimeWindow"), ("units", "enum:metric|imperial")], ["aggregate"]),
        "air_quality_report": ("air_quality_reports", ["good", "moderate", "unhealthy"], [("location", "obj:GeoPoint"), ("pollutant", "enum:pm25|pm10|o3|no2")], []),
    },
    "inventory": {
        "product": ("products", ["active", "discontinued"], [("sku", "str"), ("name", "str"), ("price", "money"), ("weight_grams", "int"), ("dimensions", "obj:Dimensions")], ["reprice"]),
        "stock_level": ("stock_levels", ["in_stock", "low", "out_of_stock"], [("sku", "str"), ("warehouse_id", "str"), ("quantity", "int")], ["adjust", "reserve", "transfer"]),
        "warehouse": ("warehouses", ["open", "closed"], [("name", "str"), ("address", "obj:Address"), ("capacity_pallets", "int")], []),
        "supplier": ("suppliers", ["approved", "pending", "blocked"], [("name", "str"), ("contact_email", "email"), ("lead_time_days", "int"), ("country", "str")], ["reorder_from"]),
    },
    "shipping": {
        "shipment": ("shipments", ["label_created", "in_transit", "delivered", "exception"], [("order_id", "str"), ("carrier", "enum:ups|fedex|dhl|usps"), ("service_level", "enum:ground|express|overnight"), ("destination", "obj:Address"), ("parcel", "obj:Dimensions")], ["track", "cancel", "reroute"]),
        "label": ("labels", ["valid", "voided"], [("shipment_id", "str"), ("format", "enum:pdf|png|zpl")], ["print", "void"]),
        "rate_quote": ("rate_quotes", ["quoted"], [("origin", "obj:Address"), ("destination", "obj:Address"), ("parcel", "obj:Dimensions"), ("carrier", "enum:ups|fedex|dhl|usps")], ["compare"]),
        "return_request": ("return_requests", ["requested", "approved", "received"], [("order_id", "str"), ("reason", "enum:damaged|wrong_item|no_longer_needed|other"), ("items", "list")], ["approve"]),
    },
    "hr": {
        "employee": ("employees", ["active", "on_leave", "terminated"], [("first_name", "str"), ("last_name", "str"), ("work_email", "email"), ("department", "enum:engineering|sales|support|finance|people"), ("manager_id", "str"), ("start_date", "date")], ["terminate", "promote"]),
        "time_off_request": ("time_off_requests", ["pending", "approved", "denied"], [("employee_id", "str"), ("kind", "enum:vacation|sick|parental|unpaid"), ("period", "obj:TimeWindow"), ("comment", "str")], ["approve", "deny"]),
        "job_posting": ("job_postings", ["draft", "published", "closed"], [("title", "str"), ("department", "enum:engineering|sales|support|finance|people"), ("location", "str"), ("remote", "bool"), ("salary_range", "obj:MoneyRange")], ["publish"]),
        "payroll_run": ("payroll_runs", ["scheduled", "processing", "paid"], [("period", "obj:TimeWindow"), ("currency", "enum:usd|eur|gbp")], ["approve", "preview"]),
    },
    "helpdesk": {
        "ticket": ("tickets", ["new", "open", "pending", "solved"], [("subject", "str"), ("description", "str"), ("priority", "enum:low|normal|high|urgent"), ("requester_email", "email"), ("tags", "list")], ["assign", "escalate", "merge", "solve"]),
        "macro": ("macros", ["active", "inactive"], [("title", "str"), ("actions", "obj:KeyValues")], ["apply"]),
        "satisfaction_rating": ("satisfaction_ratings", ["good", "bad"], [("ticket_id", "str"), ("score", "enum:good|bad"), ("comment", "str")], []),
        "agent": ("agents", ["online", "away", "offline"], [("name", "str"), ("email", "email"), ("role", "enum:agent|lead|admin"), ("groups", "list")], ["set_status"]),
    },
    "analytics": {
        "report": ("reports", ["ready", "running", "failed"], [("metric", "enum:sessions|users|revenue|conversions|bounce_rate"), ("dimensions", "list"), ("period", "obj:TimeWindow"), ("filters", "obj:KeyValues")], ["run", "schedule"]),
        "dashboard": ("dashboards", ["shared", "private"], [("title", "str"), ("widgets", "list"), ("refresh_minutes", "int")], ["share"]),
        "funnel": ("funnels", ["active"], [("name", "str"), ("steps", "list"), ("conversion_window_days", "int")], ["analyze"]),
        "segment": ("segments", ["active", "archived"], [("name", "str"), ("rules", "obj:KeyValues"), ("estimated_size", "int")], ["estimate"]),
    },
    "marketing": {
        "campaign": ("campaigns", ["draft", "scheduled", "sent"], [("name", "str"), ("channel", "enum:email|sms|push|social"), ("audience_segment_id", "str"), ("send_at", "date"), ("budget", "money")], ["schedule", "send_test", "pause"]),
        "email_template": ("email_templates", ["draft", "published"], [("name", "str"), ("subject", "str"), ("html_body", "str")], ["render"]),
        "mailing_list": ("mailing_lists", ["active", "archived"], [("name", "str"), ("double_opt_in", "bool")], ["subscribe", "unsubscribe"]),
        "landing_page": ("landing_pages", ["draft", "live"], [("slug", "str"), ("title", "str"), ("ab_test", "bool")], ["publish"]),
    },
    "storage": {
        "file": ("files", ["available", "trashed"], [("path", "str"), ("size_bytes", "int"), ("content_type", "str"), ("metadata", "obj:KeyValues")], ["move", "copy", "share", "download"]),
        "folder": ("folders", ["available", "trashed"], [("path", "str"), ("parent_id", "str")], ["move", "share"]),
        "bucket": ("buckets", ["active"], [("name", "str"), ("region", "enum:us-east-1|eu-west-1|ap-south-1"), ("versioning", "bool"), ("lifecycle_days", "int")], ["empty"]),
        "share_link": ("share_links", ["active", "revoked"], [("file_id", "str"), ("expires_on", "date"), ("permission", "enum:view|comment|edit")], ["revoke"]),
    },
    "projects": {
        "task": ("tasks", ["todo", "in_progress", "done"], [("title", "str"), ("project_id", "str"), ("assignee_id", "str"), ("due_date", "date"), ("priority", "enum:p0|p1|p2|p3"), ("estimate", "obj:Estimate")], ["assign", "complete", "move"]),
        "project": ("projects", ["active", "on_hold", "completed"], [("name", "str"), ("owner_id", "str"), ("deadline", "date")], ["close"]),
        "milestone": ("milestones", ["upcoming", "reached", "missed"], [("project_id", "str"), ("title", "str"), ("due_date", "date")], []),
        "sprint": ("sprints", ["planned", "active", "closed"], [("board_id", "str"), ("goal", "str"), ("period", "obj:TimeWindow")], ["start", "complete"]),
    },
    "chat": {
        "message": ("messages", ["sent", "edited", "deleted"], [("channel_id", "str"), ("text", "str"), ("thread_ts", "str"), ("attachments", "list")], ["post", "pin", "react"]),
        "channel": ("channels", ["public", "private", "archived"], [("name", "str"), ("topic", "str"), ("is_private", "bool")], ["invite", "join", "leave", "set_topic"]),
        "user_status": ("user_statuses", ["active", "away"], [("user_id", "str"), ("emoji", "str"), ("text", "str"), ("expires_in_minutes", "int")], ["set"]),
        "bookmark": ("bookmarks", ["active"], [("channel_id", "str"), ("title", "str"), ("link", "str")], []),
    },
    "dns": {
        "record": ("records", ["active", "pending"], [("zone_id", "str"), ("name", "str"), ("type", "enum:A|AAAA|CNAME|MX|TXT|NS"), ("content", "str"), ("ttl", "int"), ("proxied", "bool")], []),
        "zone": ("zones", ["active", "pending", "moved"], [("name", "str"), ("plan", "enum:free|pro|business"), ("jump_start", "bool")], ["purge_cache", "verify"]),
        "certificate": ("certificates", ["active", "expiring", "expired"], [("zone_id", "str"), ("hosts", "list"), ("validity_days", "int")], ["renew"]),
    },
    "monitoring": {
        "alert_rule": ("alert_rules", ["ok", "firing", "muted"], [("name", "str"), ("query", "str"), ("threshold", "float"), ("comparison", "enum:gt|gte|lt|lte"), ("window_minutes", "int"), ("notify", "obj:NotifyTarget")], ["mute", "unmute", "test"]),
        "incident": ("incidents", ["triggered", "acknowledged", "resolved"], [("title", "str"), ("severity", "enum:sev1|sev2|sev3|sev4"), ("service_id", "str")], ["acknowledge", "resolve", "escalate"]),
        "metric": ("metrics", ["reporting", "stale"], [("name", "str"), ("tags", "obj:KeyValues"), ("period", "obj:TimeWindow"), ("aggregation", "enum:avg|sum|min|max|p95")], ["query"]),
        "uptime_check": ("uptime_checks", ["up", "down", "paused"], [("url", "str"), ("interval_seconds", "int"), ("regions", "list")], ["pause", "resume"]),
    },
    "travel": {
        "flight": ("flights", ["scheduled", "delayed", "cancelled"], [("origin", "str"), ("destination", "str"), ("depart_date", "date"), ("cabin", "enum:economy|premium|business|first"), ("passengers", "int")], ["book", "check_in"]),
        "hotel_booking": ("hotel_bookings", ["reserved", "cancelled", "completed"], [("hotel_id", "str"), ("stay", "obj:TimeWindow"), ("guests", "int"), ("room_type", "enum:single|double|suite")], ["cancel", "modify"]),
        "itinerary": ("itineraries", ["draft", "confirmed"], [("traveler_email", "email"), ("title", "str"), ("legs", "list")], ["share"]),
        "car_rental": ("car_rentals", ["reserved", "picked_up", "returned"], [("pickup_location", "str"), ("period", "obj:TimeWindow"), ("car_class", "enum:compact|midsize|suv|van")], ["extend"]),
    },
    "ecommerce": {
        "order": ("orders", ["pending", "paid", "fulfilled", "refunded"], [("customer_email", "email"), ("items", "list"), ("shipping_address", "obj:Address"), ("total", "money"), ("currency", "enum:usd|eur|gbp")], ["refund", "fulfill", "cancel"]),
        "cart": ("carts", ["active", "abandoned", "converted"], [("customer_email", "email"), ("items", "list")], ["checkout", "add_item", "remove_item"]),
        "review": ("reviews", ["pending", "published", "rejected"], [("product_id", "str"), ("rating", "int"), ("title", "str"), ("body", "str")], ["moderate"]),
        "discount_code": ("discount_codes", ["active", "expired"], [("code", "str"), ("value", "float"), ("kind", "enum:percent|fixed|free_shipping")], []),
    },
    "accounting": {
        "journal_entry": ("journal_entries", ["draft", "posted"], [("date", "date"), ("memo", "str"), ("lines", "obj:LineItem")], ["post", "reverse"]),
        "account": ("accounts", ["active", "closed"], [("code", "str"), ("name", "str"), ("kind", "enum:asset|liability|equity|income|expense")], ["reconcile"]),
        "expense": ("expenses", ["submitted", "approved", "reimbursed"], [("employee_id", "str"), ("amount", "money"), ("category", "enum:travel|meals|software|hardware|other"), ("receipt_url", "str")], ["approve", "reimburse"]),
        "tax_rate": ("tax_rates", ["active", "archived"], [("name", "str"), ("percentage", "float"), ("jurisdiction", "str")], []),
    },
    "iot": {
        "device": ("devices", ["online", "offline", "provisioning"], [("serial", "str"), ("model", "str"), ("firmware", "str"), ("location", "obj:GeoPoint")], ["reboot", "update_firmware", "ping"]),
        "sensor_reading": ("sensor_readings", ["valid", "suspect"], [("device_id", "str"), ("sensor", "enum:temperature|humidity|pressure|co2"), ("window", "obj:TimeWindow")], ["aggregate"]),
        "automation": ("automations", ["enabled", "disabled"], [("name", "str"), ("trigger", "obj:KeyValues"), ("actions", "list")], ["enable", "disable", "trigger"]),
        "gateway": ("gateways", ["online", "offline"], [("name", "str"), ("site", "str")], ["reboot"]),
    },
}

GENERIC_VERBS = ["get", "list", "create", "update", "delete", "search", "export", "archive", "count", "restore", "history"]

VERB_TEXT = {
    "get": "Fetch a single {e} by its ID and return the full record.",
    "list": "List {es}, newest first. Results are paginated; pass the returned cursor to get the next page.",
    "create": "Create a new {e}. Returns the created {e} with its generated ID.",
    "update": "Update an existing {e}. Only the fields you pass are changed; everything else is kept.",
    "delete": "Permanently delete a {e}. This cannot be undone; use archive if you may need it again.",
    "search": "Search {es} by free text and optional structured filters. Matches are ranked by relevance.",
    "export": "Export {es} matching the filters to a downloadable file. Large exports run asynchronously and return a job ID.",
    "archive": "Archive a {e} so it no longer appears in default listings. Archived items can be restored later.",
    "count": "Count {es}, optionally filtered by status. Cheaper than listing when only the number matters.",
    "restore": "Restore a previously archived or trashed {e}.",
    "history": "Get the change history of a {e}: who changed which fields and when, newest first.",
}

DOMAIN_TEXT = {
    "billing": "Part of the billing system (Stripe-like).",
    "calendar": "Works on the shared team calendar.",
    "crm": "Operates on the sales CRM.",
    "github": "Uses the GitHub REST API on behalf of the connected account.",
    "weather": "Data comes from the weather provider; times are UTC.",
    "inventory": "Applies to the warehouse inventory system.",
    "shipping": "Goes through the multi-carrier shipping service.",
    "hr": "Part of the HR information system; requires HR permissions.",
    "helpdesk": "Operates on the customer support helpdesk.",
    "analytics": "Reads from the product analytics warehouse.",
    "marketing": "Part of the marketing automation platform.",
    "storage": "Works on the cloud file storage.",
    "projects": "Operates on the project management board.",
    "chat": "Acts in the team chat workspace as the bot user.",
    "dns": "Manages DNS zones at the DNS provider.",
    "monitoring": "Part of the observability and on-call platform.",
    "travel": "Uses the corporate travel booking service.",
    "ecommerce": "Operates on the online store.",
    "accounting": "Posts to the general ledger.",
    "iot": "Talks to the IoT device fleet manager.",
}

# Domain-specific verbs: what they do, in an agent-readable sentence ({e} = entity).
SPECIAL_TEXT = {
    "acknowledge": "Acknowledge a {e} so on-call knows someone is working on it and escalation stops.",
    "add_item": "Add a product line to a {e}, or increase its quantity if the product is already there.",
    "adjust": "Adjust a {e} up or down by a relative quantity, recording why (cycle count, damage, correction).",
    "aggregate": "Aggregate {e} data over a time window into min, max, mean and percentiles.",
    "analyze": "Analyze a {e}: step-by-step conversion rates, drop-off and median time between steps.",
    "apply": "Apply a {e} to a target object, running all of its configured actions at once.",
    "approve": "Approve a pending {e}. The requester is notified and downstream processing starts.",
    "assign": "Assign a {e} to a user or team, replacing the current assignee.",
    "book": "Book a {e} for the traveler and return the confirmation code and fare breakdown.",
    "cancel": "Cancel a {e}. Any applicable fees or refunds are calculated and returned.",
    "change_plan": "Move a {e} to a different plan, prorating charges for the current period.",
    "check_in": "Check the traveler in online for a {e} and return the boarding passes.",
    "checkout": "Convert a {e} into an order: reserves stock, charges the saved payment method and returns the order.",
    "close": "Close a {e}, marking it finished; it stays readable but no longer accepts changes.",
    "compare": "Compare a {e} side by side with alternatives and highlight the differences.",
    "complete": "Mark a {e} as complete and record who completed it and when.",
    "copy": "Copy a {e} to another location, keeping the original in place.",
    "deny": "Deny a pending {e}, with an optional reason shown to the requester.",
    "disable": "Disable a {e} so it stops running until it is enabled again.",
    "download": "Get a short-lived download URL for a {e}'s contents.",
    "empty": "Delete every object in a {e} while keeping the {e} itself and its settings.",
    "enable": "Enable a {e} so it starts running on its trigger again.",
    "enrich": "Enrich a {e} with public firmographic data such as industry, size and location.",
    "escalate": "Escalate a {e} to the next support tier or on-call level and raise its priority.",
    "estimate": "Estimate how many users match a {e} without materializing it.",
    "extend": "Extend a {e} to a later end date, returning the new price.",
    "finalize": "Finalize a draft {e} so it can no longer be edited and becomes payable.",
    "find_slot": "Find free meeting slots common to several people within a time window.",
    "fork": "Fork a {e} into another account or organization.",
    "fulfill": "Mark a {e} as fulfilled and attach tracking numbers; the customer gets a shipping email.",
    "invite": "Invite people to a {e} by email; they receive an invitation they can accept.",
    "join": "Join a {e} as the bot user so it can read and post messages there.",
    "label": "Add or replace labels on a {e}.",
    "leave": "Leave a {e}; the bot user stops receiving its messages.",
    "lock": "Lock the conversation on a {e} so only collaborators can comment.",
    "mark_lost": "Mark a {e} as lost, with the reason, removing it from the open pipeline.",
    "mark_won": "Mark a {e} as won and record the final amount and close date.",
    "merge": "Merge a {e} into another one; comments, history and links are moved to the survivor.",
    "moderate": "Approve or reject a {e} before it is shown publicly.",
    "modify": "Change the dates, guests or room type of an existing {e}, repricing if needed.",
    "move": "Move a {e} to a different parent, folder, column or project.",
    "move_stage": "Move a {e} to another pipeline stage and log the stage change.",
    "mute": "Mute a {e} for a period so it evaluates but does not notify anyone.",
    "pause": "Pause a {e} temporarily; it can be resumed later without losing its settings.",
    "pin": "Pin a {e} so it is shown at the top for everyone.",
    "ping": "Ping a {e} and report its round-trip latency and last-seen time.",
    "post": "Post a new {e} to a channel or thread as the bot user.",
    "preview": "Preview a {e} without committing it: totals, deductions and warnings.",
    "print": "Send a {e} to a connected printer.",
    "promote": "Promote an {e} to a new title and compensation effective on a date.",
    "publish": "Publish a {e} so it becomes publicly visible.",
    "purge_cache": "Purge cached content for a {e}, for everything or for specific URLs.",
    "query": "Query a {e} time series with an aggregation and return the data points.",
    "react": "Add an emoji reaction to a {e}.",
    "reboot": "Reboot a {e} remotely; it goes offline for a short while.",
    "reconcile": "Reconcile an {e} against a bank statement and list unmatched transactions.",
    "refund": "Refund a {e}'s payment in full or in part back to the original payment method.",
    "reimburse": "Reimburse an approved {e} to the employee with the next payout.",
    "remove_item": "Remove a product line from a {e}.",
    "render": "Render an {e} with sample data and return the resulting HTML.",
    "renew": "Renew a {e} before it expires.",
    "reopen": "Reopen a closed {e}.",
    "reorder_from": "Place a purchase order with a {e} for items that are below their reorder point.",
    "reprice": "Change a {e}'s price, optionally scheduling the change for later.",
    "request_review": "Request reviews on a {e} from users or teams.",
    "reroute": "Redirect a {e} in transit to a different delivery address.",
    "rerun": "Re-run a {e}, optionally only the failed jobs.",
    "reschedule": "Move an {e} to a new time and notify attendees.",
    "reserve": "Reserve stock for an order so it cannot be sold twice; reservations expire automatically.",
    "resolve": "Resolve an {e} and record the resolution summary.",
    "resume": "Resume a paused {e}.",
    "reverse": "Reverse a posted {e} by creating an offsetting entry.",
    "revoke": "Revoke a {e} so it no longer grants access.",
    "rsvp": "Reply to an {e} invitation with yes, no or maybe.",
    "run": "Run a {e} now and return its rows.",
    "schedule": "Schedule a {e} to run or send automatically at a given time.",
    "send_reminder": "Email the customer a payment reminder for an unpaid {e}.",
    "send_test": "Send a test version of a {e} to a list of internal addresses.",
    "set": "Set the current user's {e}, with an optional expiry.",
    "set_default": "Make a {e} the customer's default for future charges.",
    "set_status": "Set an {e}'s availability status.",
    "set_topic": "Set the topic line of a {e}.",
    "share": "Share a {e} with people or groups at a given permission level.",
    "snooze": "Snooze a {e} for a number of minutes.",
    "solve": "Mark a {e} as solved and send the requester the resolution.",
    "star": "Star a {e} for the authenticated user.",
    "start": "Start a {e}, moving its committed items into progress.",
    "subscribe": "Subscribe to a {e} to receive updates.",
    "tag": "Add tags to a {e} for segmentation.",
    "terminate": "Terminate an {e}, ending access on the given date and starting offboarding.",
    "test": "Test an {e} against current data and report whether it would fire.",
    "track": "Track a {e}: current status, location and estimated delivery date.",
    "transfer": "Transfer a {e} to another owner or location.",
    "trigger": "Trigger an {e} manually, outside its normal trigger.",
    "unmute": "Unmute a {e} so it notifies again.",
    "unsubscribe": "Remove a subscriber from a {e}.",
    "update_firmware": "Update a {e}'s firmware to a given version; the device reboots when done.",
    "verify": "Verify ownership of a {e} by checking its nameserver or TXT records.",
    "void": "Void a {e} so it can no longer be paid or used; it stays on record.",
}
READ_ONLY_SPECIAL = {"aggregate", "analyze", "compare", "download", "estimate", "find_slot", "ping", "preview", "query", "render", "test", "track"}

# Descriptions of common parameters (otherwise derived from the name and type).
PARAM_TEXT = {
    "limit": "Maximum number of items to return.",
    "cursor": "Pagination cursor from a previous response; omit for the first page.",
    "status": "Only include items in this status.",
    "created_after": "Only include items created after this ISO 8601 date.",
    "sort": "Field to sort by, descending.",
    "query": "Free-text search query.",
    "force": "Delete even if other objects still reference it.",
    "notify": "Whether to notify the people involved.",
    "reason": "Short reason, stored in the audit log.",
    "format": "File format of the export.",
    "period": "Time window to cover.",
    "include_deleted": "Also return the record if it was soft-deleted.",
    "idempotency_key": "Unique key that makes retries safe: a repeated request with the same key returns the first result.",
    "if_match": "Only apply the update if the record's current ETag equals this value (optimistic locking).",
    "dry_run": "Validate the request and return what would happen without changing anything.",
}

NESTED_MODELS: dict[str, dict[str, tuple[str, Any]]] = {
    "Address": {"street": ("str", ...), "city": ("str", ...), "postal_code": ("str", None), "country": ("str", ...)},
    "LineItem": {"description": ("str", ...), "quantity": ("int", 1), "unit_price": ("float", ...)},
    "Location": {"name": ("str", ...), "room": ("str", None), "video_link": ("str", None)},
    "TimeWindow": {"start": ("str", ...), "end": ("str", ...)},
    "GeoPoint": {"lat": ("float", ...), "lon": ("float", ...), "label": ("str", None)},
    "KeyValues": {"key": ("str", ...), "value": ("str", ...)},
    "Dimensions": {"length_cm": ("float", ...), "width_cm": ("float", ...), "height_cm": ("float", ...), "weight_kg": ("float", None)},
    "MoneyRange": {"min": ("float", ...), "max": ("float", ...), "currency": ("str", "usd")},
    "Estimate": {"points": ("int", None), "hours": ("float", None)},
    "NotifyTarget": {"channel": ("enum:email|slack|pagerduty|webhook", ...), "target": ("str", ...)},
}


def _py_type(kind: str) -> Any:
    if kind in ("str", "date", "email"):
        return str
    if kind == "int":
        return int
    if kind in ("float", "money"):
        return float
    if kind == "bool":
        return bool
    if kind == "list":
        return list[str]
    if kind.startswith("enum:"):
        return Literal[tuple(kind[5:].split("|"))]  # type: ignore[misc]
    if kind.startswith("obj:"):
        return _nested_model(kind[4:])
    raise ValueError(kind)


_model_cache: dict[str, type[BaseModel]] = {}


def _nested_model(name: str) -> type[BaseModel]:
    if name not in _model_cache:
        fields = {}
        for fname, (kind, default) in NESTED_MODELS[name].items():
            t = _py_type(kind)
            fields[fname] = (t if default is ... else Optional[t], default)
        _model_cache[name] = create_model(name, **fields)  # type: ignore[call-overload]
    return _model_cache[name]


def _camel(s: str) -> str:
    head, *rest = s.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _kind_desc(name: str, kind: str, e: str) -> str:
    words = name.replace("_", " ")
    if kind == "date":
        return f"The {words} as an ISO 8601 date or date-time."
    if kind == "email":
        return f"The {words} (an email address)."
    if kind == "money":
        return f"The {words} in the currency's major unit (e.g. 12.50)."
    if kind == "list":
        return f"The {words}, as a list of strings."
    if kind.startswith("obj:"):
        return f"The {words} of the {e}."
    if name.endswith("_id"):
        return f"ID of the {name[:-3].replace('_', ' ')}."
    if kind == "bool":
        return f"Whether the {e} is {words}." if not words.startswith(("is ", "include")) else f"{words[:1].upper()}{words[1:]}."
    if kind.startswith("enum:"):
        return f"The {words} of the {e} (one of the listed values)."
    return f"The {words} of the {e}."


def _tool_spec(domain: str, entity: str, verb: str) -> dict[str, Any]:
    """Deterministic spec for one generated tool (independent of N)."""
    plural, statuses, fields, _special = DOMAINS[domain][entity]
    rng = random.Random(int(hashlib.sha256(f"{domain}/{entity}/{verb}".encode()).hexdigest()[:12], 16))
    style = rng.choices(["snake", "camel", "kebab", "dotted"], weights=[60, 20, 15, 5])[0]
    obj = plural if verb in ("list", "search", "export", "count") else entity
    parts = [domain, "get", entity + "_history"] if verb == "history" else [domain, verb, obj]
    base = "_".join(parts)
    if style == "snake":
        name = base
    elif style == "camel":
        name = _camel(base)
    elif style == "kebab":
        name = base.replace("_", "-")
    else:
        name = f"{parts[0]}.{'_'.join(parts[1:])}"
    e, es = entity.replace("_", " "), plural.replace("_", " ")
    id_field = f"{entity}_id"
    status_kind = "enum:" + "|".join(statuses)
    params: list[tuple[str, str, bool, Any]] = []  # (name, kind, required, default)
    if verb == "get":
        params = [(id_field, "str", True, None)]
        if rng.random() < 0.5:
            params.append(("include_deleted", "bool", False, False))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "list":
        params = [("limit", "int", False, 50), ("cursor", "str", False, None), ("status", status_kind, False, None)]
        if rng.random() < 0.5:
            params.append(("created_after", "date", False, None))
        if rng.random() < 0.4:
            params.append(("sort", "enum:created_at|updated_at|name", False, "created_at"))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "create":
        k = rng.randint(1, min(len(fields), 7))
        for i, (fname, fkind) in enumerate(fields[:k]):
            params.append((fname, fkind, i < max(1, k // 2), None))
        if rng.random() < 0.4:
            params.append(("idempotency_key", "str", False, None))
        if rng.random() < 0.3:
            params.append(("dry_run", "bool", False, False))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "update":
        params = [(id_field, "str", True, None)]
        for fname, fkind in rng.sample(fields, rng.randint(1, min(len(fields), 6))):
            params.append((fname, fkind, False, None))
        if rng.random() < 0.3:
            params.append(("notify", "bool", False, True))
        if rng.random() < 0.3:
            params.append(("if_match", "str", False, None))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "history":
        params = [(id_field, "str", True, None), ("limit", "int", False, 50)]
        if rng.random() < 0.5:
            params.append(("since", "date", False, None))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb in ("delete", "archive", "restore"):
        params = [(id_field, "str", True, None)]
        if verb == "delete":
            params.append(("force", "bool", False, False))
        if verb == "archive" and rng.random() < 0.5:
            params.append(("reason", "str", False, None))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "search":
        params = [("query", "str", True, None), ("limit", "int", False, 20)]
        extra = [f for f in fields if f[1].startswith("enum:") or f[1] in ("date", "bool")]
        for fname, fkind in extra[: rng.randint(0, 3)]:
            params.append((fname, fkind, False, None))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "export":
        params = [("format", "enum:csv|json|xlsx", False, "csv"), ("period", "obj:TimeWindow", False, None), ("status", status_kind, False, None)]
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    elif verb == "count":
        params = [("status", status_kind, False, None)]
        if rng.random() < 0.5:
            params.append(("created_after", "date", False, None))
        sentence = VERB_TEXT[verb].format(e=e, es=es)
    else:  # domain-specific verb
        params = [(id_field, "str", True, None)]
        for fname, fkind in rng.sample(fields, rng.randint(0, min(3, len(fields)))):
            params.append((fname, fkind, False, None))
        if rng.random() < 0.4:
            params.append(("notify", "bool", False, True))
        if rng.random() < 0.3:
            params.append(("reason", "str", False, None))
        sentence = SPECIAL_TEXT[verb].format(e=e, es=es)
    seen: set[str] = set()
    params = [p for p in params if not (p[0] in seen or seen.add(p[0]))][:8]
    desc = sentence + " " + DOMAIN_TEXT[domain]
    params = [(p, k, r, d, PARAM_TEXT.get(p) or _kind_desc(p, k, e)) for (p, k, r, d) in params]
    if style == "camel":
        params = [(_camel(p), k, r, d, t) for (p, k, r, d, t) in params]
    return {"name": name, "domain": domain, "entity": entity, "verb": verb, "description": desc, "params": params,
            "read_only": verb in ("get", "list", "search", "count", "export", "history") or verb in READ_ONLY_SPECIAL}


def catalog_specs(n: int) -> list[dict[str, Any]]:
    all_specs = []
    for domain, ents in DOMAINS.items():
        for entity, (_pl, _st, _f, special) in ents.items():
            for verb in GENERIC_VERBS + special:
                all_specs.append(_tool_spec(domain, entity, verb))
    random.Random(20261121).shuffle(all_specs)
    out, seen = [], set()
    round_ = 1
    while len(out) < n:
        for s in all_specs:
            if len(out) >= n:
                break
            s = dict(s)
            if round_ > 1:  # beyond the base catalog: versioned copies
                s["name"] = f"{s['name']}_v{round_}"
                s["description"] = f"(API v{round_}) " + s["description"]
            if s["name"] in seen:
                continue
            seen.add(s["name"])
            out.append(s)
        round_ += 1
    return out


def _make_generated_fn(spec: dict[str, Any]):
    tool_name = spec["name"]

    def generated(**kwargs: Any) -> str:
        args = {k: (v.model_dump(mode="json") if isinstance(v, BaseModel) else v) for k, v in kwargs.items()}
        return json.dumps({"tool": tool_name, "ok": True, "arguments": args}, sort_keys=True)

    sig_params = []
    for pname, kind, required, default, desc in spec["params"]:
        t = _py_type(kind)
        if required:
            ann = Annotated[t, Field(description=desc)]
            sig_params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, annotation=ann))
        else:
            ann = Annotated[Optional[t], Field(description=desc)] if default is None else Annotated[t, Field(description=desc)]
            sig_params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default))
    generated.__signature__ = inspect.Signature(sig_params, return_annotation=str)  # type: ignore[attr-defined]
    generated.__annotations__ = {p.name: p.annotation for p in sig_params} | {"return": str}
    generated.__name__ = "generated_" + "".join(c if c.isalnum() else "_" for c in tool_name)
    return generated


def register_catalog(server: Any, n: int) -> None:
    for spec in catalog_specs(n):
        server.add_tool(
            _make_generated_fn(spec),
            name=spec["name"],
            description=spec["description"],
            annotations=ToolAnnotations(readOnlyHint=spec["read_only"]),
            structured_output=False,  # JSON inside a text block, no outputSchema
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    ap.add_argument("--dump-catalog", action="store_true", help="print the ODD_TOOLS catalog specs as JSON and exit")
    a = ap.parse_args()
    n = int(os.environ.get("ODD_TOOLS", "0") or 0)
    if a.dump_catalog:
        json.dump([{k: v for k, v in s.items() if k != "params"} | {"params": [p[0] for p in s["params"]]} for s in catalog_specs(n)], sys.stdout, indent=1)
        print()
        return
    server = make_server(a.http)
    register_fixed_tools(server)
    if os.environ.get("ODD_SCHEMAS"):
        register_schema_tools(server)
    if n > 0:
        register_catalog(server, n)
    log(f"mcp {MCP_MAJOR}.x, {'http port %d' % a.http if a.http else 'stdio'}, {n} generated tools")
    if a.http:
        if MCP_MAJOR >= 2:
            server.run("streamable-http", host="127.0.0.1", port=a.http)
        else:
            server.run("streamable-http")
    else:
        server.run()


if __name__ == "__main__":
    main()
