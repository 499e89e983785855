"""The picture of a site: its adapters, channels and routes as a graph drawn from the running
configuration, with live counts and rates on the arrows, dead letters and stuck channels
marked, each node a link to its page (what NiFi's canvas shows its operators, read-only).

Server-rendered SVG, no script and no layout library: the graph of a site is small and
mostly a flow from left to right, so each node goes in the column of its longest path from
an inbound adapter (inbound adapters first, outbound adapters last) and the nodes of a
column are stacked in name order. The console page refreshes it in place like every page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from coupler.bus.config.loader import SiteConfig

NODE_W, NODE_H = 190, 72
COL_GAP, ROW_GAP, MARGIN = 110, 34, 20


@dataclass
class Node:
    kind: str  # adapter | channel | route
    name: str
    lines: list[str] = field(default_factory=list)
    href: str = "/"
    marks: list[str] = field(default_factory=list)  # dead | stuck | failed | paused
    column: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)


@dataclass
class Edge:
    source: tuple[str, str]
    target: tuple[str, str]
    label: str = ""


@dataclass
class Graph:
    nodes: dict[tuple[str, str], Node]
    edges: list[Edge]


def _rate(rates: list[Any], i: int) -> float:
    return float(rates[-1][i]) if rates else 0.0


def site_graph(site: SiteConfig, status: dict[str, Any], rates: dict[str, list[Any]]) -> Graph:
    """The graph of ``site`` with the figures of ``status`` (the Control Bus status) and the
    channels' recent ``rates`` (``[(time, in/s, out/s), ...]`` per channel)."""
    nodes: dict[tuple[str, str], Node] = {}
    edges: list[Edge] = []
    channels = {c["channel"]: c for c in status.get("channels", [])}
    adapters = {a["name"]: a for a in status.get("adapters", [])}
    stuck = {a["channel"] for a in status.get("alerts", []) if "channel" in a}

    def channel(name: str) -> tuple[str, str]:
        key = ("channel", name)
        if key not in nodes:
            c = channels.get(name, {})
            r = rates.get(name, [])
            dead = int(c.get("dead", 0)) + int(c.get("invalid", 0))
            node = Node("channel", name, [f"depth {c.get('depth', 0)}", f"in {_rate(r, 1):.1f}/s · out {_rate(r, 2):.1f}/s"],
                        href=f"/dead-letters?channel={quote(name)}" if dead else "/channels")
            if dead:
                node.marks.append("dead")
                node.lines.append(f"{dead} dead/invalid")
            if name in stuck:
                node.marks.append("stuck")
            nodes[key] = node
        return key

    for ad in site.adapters:
        if not ad.enabled:
            continue
        row = adapters.get(ad.name, {})
        node = Node("adapter", ad.name, [f"{ad.type} · {row.get('state', 'stopped')}"], href="/adapters")
        health = (row.get("health") or {}).get("status")
        if health and health != "ok":
            node.lines.append(f"health {health}")
        if row.get("state") in ("failed", "stopped"):
            node.marks.append("failed")
        elif row.get("state") == "paused":
            node.marks.append("paused")
        nodes[node.key] = node
        if not ad.channel:
            continue
        if ad.direction in ("inbound", "both"):
            edges.append(Edge(node.key, channel(ad.channel), f"{row.get('out', 0)} published"))
        if ad.direction in ("outbound", "both"):
            edges.append(Edge(channel(ad.channel), node.key, f"{row.get('in', 0)} taken"))
    for route in site.routes:
        name = route.name or "route"
        node = Node("route", name, _route_lines(route), href="/channels")
        nodes[node.key] = node
        source = channel(route.source)
        edges.append(Edge(source, node.key, f"{channels.get(route.source, {}).get('acked', 0)} routed"))
        targets: list[str] = [t for t in getattr(route, "to", ()) or ()]
        for step in getattr(route, "steps", ()) or ():  # steps that send aside (wire tap, expire, ...)
            aside = getattr(step, "to", None) or (getattr(step, "model_extra", None) or {}).get("to")
            for t in [aside] if isinstance(aside, str) else list(aside or ()):
                if isinstance(t, str) and t not in targets:
                    targets.append(t)
        for rule in getattr(route, "rules", ()) or ():
            targets += [t for t in rule.to if t not in targets]
        otherwise = getattr(route, "otherwise", None)
        if otherwise and otherwise not in targets:
            targets.append(otherwise)
        for target in targets:
            edges.append(Edge(node.key, channel(target), ""))
    for name in channels:
        if not name.startswith("coupler.") and not name.startswith("reply."):
            channel(name)
    _layout(nodes, edges)
    return Graph(nodes, edges)


def _route_lines(route: Any) -> list[str]:
    lines = []
    steps = getattr(route, "steps", None)
    if steps:  # a pipeline (Pipes and Filters): its steps in order
        names = [str(getattr(s, "type", None) or getattr(s, "name", None) or s) for s in steps]
        text = " → ".join(names)
        lines.append(text if len(text) <= 30 else text[:29] + "…")
    rules = getattr(route, "rules", ()) or ()
    lines.append(f"router, {len(rules)} rule(s)" if rules else "route")
    return lines


def _layout(nodes: dict[tuple[str, str], Node], edges: list[Edge]) -> None:
    """Columns by longest path from the nodes nothing flows into (a cycle stops growing after
    as many rounds as there are nodes); inbound adapters first, outbound adapters last."""
    for _ in range(len(nodes)):
        changed = False
        for e in edges:
            a, b = nodes[e.source], nodes[e.target]
            if b.column < a.column + 1 and a.column + 1 < len(nodes):
                b.column = a.column + 1
                changed = True
        if not changed:
            break
    last = max((n.column for n in nodes.values()), default=0)
    for n in nodes.values():
        if n.kind == "adapter" and any(e.target == n.key for e in edges) and not any(e.source == n.key for e in edges):
            n.column = max(n.column, last)  # outbound adapters on the right
    columns: dict[int, list[Node]] = {}
    for n in sorted(nodes.values(), key=lambda n: (n.kind, n.name)):
        columns.setdefault(n.column, []).append(n)
    for col, members in columns.items():
        for row, n in enumerate(members):
            n.x = MARGIN + col * (NODE_W + COL_GAP)
            n.y = MARGIN + row * (NODE_H + ROW_GAP)


def render_svg(graph: Graph) -> str:
    """The graph as an accessible SVG (each node a link with a title)."""
    if not graph.nodes:
        return '<p>nothing configured yet: no adapters, channels or routes</p>'
    width = max(n.x for n in graph.nodes.values()) + NODE_W + MARGIN
    height = max(n.y for n in graph.nodes.values()) + NODE_H + MARGIN
    out = [f'<svg class="site" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
           'role="img" aria-label="The site: adapters, channels and routes, with the messages between them">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>']
    for e in graph.edges:
        a, b = graph.nodes[e.source], graph.nodes[e.target]
        x1, y1 = a.x + NODE_W, a.y + NODE_H / 2
        x2, y2 = b.x, b.y + NODE_H / 2
        if x2 <= x1:  # back to the left (a cycle): around below
            path = f"M {x1:.0f} {y1:.0f} C {x1 + 60:.0f} {y1 + 90:.0f}, {x2 - 60:.0f} {y2 + 90:.0f}, {x2:.0f} {y2:.0f}"
        else:
            mid = (x1 + x2) / 2
            path = f"M {x1:.0f} {y1:.0f} C {mid:.0f} {y1:.0f}, {mid:.0f} {y2:.0f}, {x2:.0f} {y2:.0f}"
        label = escape(e.label)
        out.append(f'<g class="edge" data-from="{escape(a.name)}" data-to="{escape(b.name)}"><path d="{path}" marker-end="url(#arrow)"/>'
                   + (f'<text x="{(x1 + x2) / 2:.0f}" y="{(y1 + y2) / 2 - 6:.0f}" text-anchor="middle">{label}</text>' if label else "")
                   + "</g>")
    for n in graph.nodes.values():
        classes = " ".join([f"node {n.kind}", *n.marks])
        title = f"{n.kind} {n.name}: " + ", ".join(n.lines + n.marks)
        text = "".join(f'<tspan x="{n.x + 10:.0f}" dy="{15 if i else 0}">{escape(line)}</tspan>'
                       for i, line in enumerate([n.name, *n.lines]))
        out.append(f'<a href="{escape(n.href)}" class="{classes}" data-node="{escape(n.kind)}:{escape(n.name)}">'
                   f'<title>{escape(title)}</title>'
                   f'<rect x="{n.x:.0f}" y="{n.y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="{12 if n.kind == "channel" else 4}"/>'
                   f'<text x="{n.x + 10:.0f}" y="{n.y + 17:.0f}">{text}</text></a>')
    out.append("</svg>")
    return "".join(out)
