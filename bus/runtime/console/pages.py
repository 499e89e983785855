"""The console's pages: server-rendered HTML, refreshed in place by ``static/console.js``.

Each page is rendered whole from Control Bus results; the script fetches the same URL every
two seconds and swaps the elements marked ``data-live`` (so inputs outside them, like the
body being edited, are left alone), and posts the buttons' actions (``data-post``).
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import quote

PAGES = (
    ("/", "overview"), ("/site", "site"), ("/adapters", "adapters"), ("/channels", "channels"),
    ("/dead-letters", "dead_letters"), ("/groups", "groups"), ("/identities", "identities"), ("/batch", "batch"),
    ("/trace", "trace"),
)
_TITLES = {
    "overview": "Overview", "site": "Site picture", "adapters": "Adapters", "channels": "Channels", "dead_letters": "Dead letters",
    "identities": "Identities", "groups": "Open groups", "batch": "Batch jobs", "trace": "Message trace", "dead_letter": "Dead letter",
}


def e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _layout(site: str, page: str, body: str) -> str:
    current = ' aria-current="page"'
    nav = "".join(
        f'<li><a href="{path}"{current if name == page else ""}>{_TITLES[name]}</a></li>'
        for path, name in PAGES
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_TITLES[page]} · {e(site)} · Coupler</title>
<link rel="stylesheet" href="/static/console.css"></head>
<body><header><p class="brand">Coupler · <strong>{e(site)}</strong></p>
<nav aria-label="Console"><ul>{nav}</ul></nav></header>
<main id="main"><h1>{_TITLES[page]}</h1>
<p id="notice" role="status" aria-live="polite"></p>
{body}</main>
<script src="/static/console.js" defer></script></body></html>
"""


def _table(caption: str, header: list[str], rows: list[list[str]], *, live: str, empty: str) -> str:
    if not rows:
        return f'<section data-live id="{live}"><p>{e(empty)}</p></section>'
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<section data-live id="{live}"><table><caption>{e(caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>")


def render(page: str, site: str, data: dict[str, Any]) -> str:
    return _layout(site, page, globals()[f"_{page}"](data))


def login_page(site: str) -> str:
    return _layout(site, "overview", "<p>This console needs its token. Open the URL that "
                   "<code>coupler ctl console</code> prints.</p>")


def error_page(site: str, message: str) -> str:
    return _layout(site, "overview", f'<p class="error" role="alert">{e(message)}</p>')


# -- pages ---------------------------------------------------------------------------------


def _overview(data: dict[str, Any]) -> str:
    s = data["status"]
    alerts = "".join(
        f"<li>{e(next((f'{k} {a[k]}' for k in ('adapter', 'batch', 'channel') if k in a), ''))}: {e(a['alert'])}</li>"
        for a in s["alerts"]
    ) or "<li>none</li>"
    adapters = s["adapters"]
    up = sum(1 for a in adapters if a["state"] in ("running", "paused"))
    depth = sum(c["depth"] for c in s["channels"])
    dead = sum(c["dead"] + c["invalid"] for c in s["channels"])
    return f"""<section data-live id="overview"><dl class="facts">
<dt>Site</dt><dd>{e(s['site'])}</dd><dt>State</dt><dd>{e(s['state'])} (pid {e(s['pid'])})</dd>
<dt>Up since</dt><dd>{e(s['started_at'])} ({_age(s['uptime_seconds'])})</dd>
<dt>Store</dt><dd>{e(data.get('store') or s['transport'])}</dd>
<dt>Adapters up</dt><dd>{up} of {len(adapters)}</dd><dt>Messages waiting</dt><dd id="total-depth">{depth}</dd>
<dt>Dead-lettered or invalid</dt><dd>{dead}</dd><dt>Routes</dt><dd>{e(', '.join(s['routes']) or 'none')}</dd>
</dl><h2>Alerts</h2><ul class="alerts">{alerts}</ul></section>
<h2>Channels</h2>""" + _table(
        "Depth and age of the oldest message per channel",
        ["Channel", "Depth", "Oldest", "Dead", "Invalid", "Rate"],
        [[f'<a href="/channels">{e(c["channel"])}</a>', e(c["depth"]), _age(c["oldest_age"]), e(c["dead"]), e(c["invalid"]),
          _chart(data.get("rates", {}).get(c["channel"], []))] for c in s["channels"]],
        live="overview-channels", empty="no channels yet")


def _site(data: dict[str, Any]) -> str:
    """The picture of the site (bus/runtime/console/picture.py), refreshed in place."""
    legend = ('<p class="legend">Adapters (square), channels (round) and routes, left to right as messages flow; '
              'arrows carry the counts, channels their depth and rates. <span class="mark-dead">Red</span>: dead '
              'letters or invalid messages (the node links to them); <span class="mark-stuck">orange</span>: a '
              'stuck channel; <span class="mark-failed">grey</span>: an adapter down; dashed: paused.</p>')
    return legend + f'<section data-live id="site-picture">{data["picture"]}</section>'


def _adapters(data: dict[str, Any]) -> str:
    rows = []
    for a in data["adapters"]:
        action = "resume" if a.get("paused") else "pause"
        button = (f'<button type="button" data-post="/api/adapters/{quote(a["name"])}/{action}" '
                  f'aria-label="{action.capitalize()} {e(a["name"])}">{action.capitalize()}</button>')
        health = a.get("health") or {}
        status = health.get("status") or ("–" if not health else "ok")
        problems = "; ".join(health.get("problems") or [])
        rows.append([e(a["name"]), e(a["type"]), e(a["direction"]), f'<span class="state-{e(a["state"])}">{e(a["state"])}</span>',
                     f'<span class="health-{e(status)}" data-health="{e(a["name"])}">{e(status)}</span>'
                     + (f'<br><small>{e(problems)}</small>' if problems else ""),
                     e(a["in"]), e(a["out"]), e(a["failed"]), _short(a.get("error") or ""), button])
    return _table("Adapters", ["Adapter", "Type", "Direction", "State", "Health", "In", "Out", "Failed", "Last error", "Action"],
                  rows, live="adapters", empty="no adapters")


def _short(text: str, limit: int = 140) -> str:
    """``text`` cut to ``limit`` characters, the whole of it in a disclosure (long reasons and
    errors keep a table readable)."""
    if len(text) <= limit:
        return e(text)
    return f'<details class="long"><summary>{e(text[:limit].rstrip())}…</summary>{e(text)}</details>'


def _id(message_id: str | None) -> str:
    """A message id on one line: its first 8 characters, the whole id as the title (and
    copied by selecting it)."""
    full = message_id or ""
    return f'<code class="id" title="{e(full)}">{e(full[:8])}…</code>' if len(full) > 12 else f'<code class="id">{e(full)}</code>'


def _chart(rates: list[list[float]] | list[tuple[float, float, float]]) -> str:
    """In/out rates as a small inline SVG (last minutes): in as a shaded area, out as a dashed
    line over it, so that both show where they are equal (a channel that keeps up)."""
    w, h = 160, 36
    if len(rates) < 2:
        return f'<svg class="chart" width="{w}" height="{h}" role="img" aria-label="no rate yet"></svg>'
    t0, t1 = rates[0][0], rates[-1][0]
    top = max(max(r[1], r[2]) for r in rates) or 1.0

    def line(i: int) -> str:
        return " ".join(f"{(r[0] - t0) / ((t1 - t0) or 1) * w:.1f},{h - r[i] / top * (h - 2) - 1:.1f}" for r in rates)

    last = rates[-1]
    label = f"in {last[1]:.1f}/s, out {last[2]:.1f}/s now; peak {top:.1f}/s"
    area = f"0,{h} {line(1)} {w},{h}"
    return (f'<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{label}">'
            f'<polygon class="in" points="{area}"/><polyline class="in" fill="none" points="{line(1)}"/>'
            f'<polyline class="out" fill="none" stroke-dasharray="4 3" points="{line(2)}"/></svg>')


def _channels(data: dict[str, Any]) -> str:
    rows = []
    for c in data["status"]["channels"]:
        rows.append([e(c["channel"]), e(c["kind"]), f'<span data-depth="{e(c["channel"])}">{c["depth"]}</span>', e(c["in_flight"]),
                     _age(c["oldest_age"]), e(c["sent"]), e(c["acked"]), e(c["failed"]), e(c["dead"]), e(c["invalid"]),
                     _chart(data["rates"].get(c["channel"], []))])
    return ('<p class="legend"><span class="in">■</span> in (shaded) <span class="out">▬ ▬</span> out (dashed), messages per second, last minutes</p>'
            + _table("Channels", ["Channel", "Kind", "Depth", "In flight", "Oldest", "Sent", "Acked", "Redelivered", "Dead",
                                  "Invalid", "Rate"], rows, live="channels", empty="no channels yet"))


def _dead_letters(data: dict[str, Any]) -> str:
    q = data["query"]
    kinds = "".join(f'<option value="{v}"{" selected" if q.get("kind", "") == v else ""}>{t}</option>'
                    for v, t in (("", "dead and invalid"), ("dead", "dead letters"), ("invalid", "invalid messages")))
    form = f"""<form method="get" class="filters"><label>Kind <select name="kind">{kinds}</select></label>
<label>Channel <input name="channel" value="{e(q.get('channel'))}"></label>
<label>Text <input name="q" value="{e(q.get('q'))}" placeholder="reason, message id, component"></label>
<button type="submit">Filter</button>
<button type="button" class="danger" data-post="/api/dead-letters/purge" data-body='{{"kind": "{e(q.get('kind', ''))}"}}'
 data-confirm="Delete the dead letters of this kind for good?">Purge</button></form>"""
    rows = [[f'<a href="/dead-letters/{d["id"]}">{d["id"]}</a>', e(d["kind"]), e(d["channel"]),
             f'<a href="/trace?q={quote(d["message_id"] or "")}">{_id(d["message_id"])}</a>',
             e(d["format"]), e(d["attempts"]), e(d["component"]), _short(d["reason"] or ""), f'<span class="nowrap">{e(d["dead_at"])}</span>']
            for d in data["dead_letters"]]
    return form + _table("Dead letters and invalid messages, newest first",
                         ["Id", "Kind", "Channel", "Message", "Format", "Attempts", "Component", "Reason", "At"],
                         rows, live="dead-letters", empty="no dead letters")


def _dead_letter(data: dict[str, Any]) -> str:
    d = data["dead_letter"]
    dec = d["decoded"]
    facts = "".join(f"<dt>{e(k)}</dt><dd>{e(d.get(k))}</dd>" for k in
                    ("kind", "queue", "channel", "message_id", "format", "reason", "error", "component", "attempts", "dead_at"))
    headers = d.get("headers") or {}
    props = "".join(f"<li><code>{e(k)}</code> = {e(v)}</li>" for k, v in sorted((headers.get("properties") or {}).items()))
    history = "".join(f"<li>{e(h)}</li>" for h in headers.get("history") or [])
    note = f' <span class="error">({e(dec["error"])})</span>' if dec.get("error") else ""
    editable = d.get("envelope") is not None
    edit = (f"""<label for="body">Body, decoded as <strong>{e(dec['as'])}</strong>{note}</label>
<textarea id="body" rows="16" spellcheck="false"{'' if editable else ' readonly'}>{e(dec['text'])}</textarea>
<p><button type="button" data-post="/api/dead-letters/{d['id']}/replay" data-body-from="body" data-then="/dead-letters">Replay edited body</button>
<button type="button" data-post="/api/dead-letters/{d['id']}/replay" data-then="/dead-letters">Replay as it was</button></p>""")
    return f"""<p><a href="/dead-letters">← all dead letters</a></p><dl class="facts">{facts}</dl>
{edit}<h2>Properties</h2><ul>{props or '<li>none</li>'}</ul><h2>Message history</h2><ol>{history or '<li>none</li>'}</ol>"""


def _identities(data: dict[str, Any]) -> str:
    rows = [[e(r["identity"]), e(r.get("adapter")), e(r["channel"])] for r in data["identities"]]
    return _table("Registered application identities", ["Identity", "Adapter", "Channel"], rows,
                  live="identities", empty="no registered identities")


def _batch(data: dict[str, Any]) -> str:
    rows = []
    for j in data["status"].get("batch") or []:
        last = j.get("last_run") or {}
        totals = j.get("totals") or {}
        progress = f"running since {e(last.get('started'))} (pid {e(j.get('pid'))})" if j["state"] == "running" else e(last.get("outcome") or "–")
        rows.append([e(j["source"]), e(j["state"]), e(", ".join(j.get("triggers") or [])), e(j.get("staged")), progress,
                     e(last.get("records")), e(last.get("bytes")), e(last.get("errors")), e(totals.get("records", 0)),
                     e(j.get("next_run") or "–"), e(last.get("error") or "")])
    return _table("Batch jobs", ["Job", "State", "Triggers", "Staged", "Last run", "Records", "Bytes", "Errors",
                                 "Records in all", "Next run", "Error"], rows, live="batch", empty="no batch jobs on this site")


def _trace(data: dict[str, Any]) -> str:
    q = data["query"].get("q", "")
    form = f"""<form method="get" class="filters" role="search"><label for="q">Message id, trace id, correlation id or business key</label>
<input id="q" name="q" size="48" value="{e(q)}" required><button type="submit">Trace</button></form>"""
    trace = data.get("trace")
    if trace is None:
        return form
    named = set(trace.get("named") or [])
    whole = data["query"].get("whole") == "1" or not named
    hops = trace["hops"] if whole else [h for h in trace["hops"] if h["message_id"] in named]
    rows = [[f'<span class="nowrap">{e(h["at"])}</span>', e(h["event"]), e(h["outcome"]), e(h["channel"]),
             f'<a href="/trace?q={quote(h["message_id"] or "")}">{_id(h["message_id"])}</a>',
             f'<span class="nowrap">{e(h["by"])}</span>'] for h in hops]
    traces = ", ".join(f'<a href="/trace?q={quote(t)}&amp;whole=1"><code>{e(t)}</code></a>' for t in trace["trace_ids"]) or "–"
    if whole:
        summary = f'<p>{len(trace["messages"])} message(s) in trace {traces}</p>'
        caption = "Every hop of the messages of the trace, oldest first"
    else:
        others = len(trace["messages"]) - len(named)
        summary = (f'<p id="scope">The hops of <code>{e(q)}</code> alone: {len(named)} message(s) of trace {traces}'
                   + (f'; <a href="/trace?q={quote(q)}&amp;whole=1">show the whole trace</a> ({others} more message(s), '
                      'e.g. the other records of the same file)' if others > 0 else "") + "</p>")
        caption = "Every hop of this message, oldest first"
    return form + f'<div data-live id="trace-summary">{summary}</div>' + _table(
        caption, ["At", "Event", "Outcome", "Channel", "Message", "By"], rows, live="trace", empty=f"nothing in the journal for {q}")



def _groups(data: dict[str, Any]) -> str:
    """The open groups of the stateful steps (Aggregator, Resequencer, Content Enricher), with
    the operator's actions on an aggregation group: complete it now, or discard it."""
    rows = []
    for g in data["groups"]:
        body = escape(json.dumps({"route": g["route"], "step": g["step"], "key": g["key"]}), quote=True)
        actions = ""
        if g["type"] == "aggregate":
            actions = (f'<button type="button" data-post="/api/groups/complete" data-body="{body}">Complete now</button> '
                       f'<button type="button" class="danger" data-post="/api/groups/discard" data-body="{body}">Discard</button>')
        rows.append([e(g["route"]), e(g["step"]), e(g["type"]), f"<code>{e(g['key'])}</code>", e(g.get("size")),
                     e(_age(g.get("age_seconds"))), actions])
    return _table("Groups held in the store by the routes' stateful steps", ["Route", "Step", "Type", "Key", "Size", "Age", ""],
                  rows, live="groups", empty="No open groups.")
