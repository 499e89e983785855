"""Route pipelines (Pipes and Filters): the steps a route runs between its channels.

A route reads ``from`` a channel, runs its ordered ``[[routes.steps]]``, and ends ``to``
channels or in its ``rules`` (Content-Based Router / Recipient List)::

    [[routes]]
    name = "orders"
    from = "orders.in"
    to = ["orders.out"]
    [[routes.steps]]
    type = "filter"
    when = "body.amount > 0"
    [[routes.steps]]
    type = "set_properties"
    properties = { region = "body.customer.region" }

Writing a step type
-------------------
A step type is a subclass of :class:`Step` with one job:

* ``type_name``: the name site.toml's ``type = "..."`` refers to;
* ``options_model``: an :class:`~coupler.canonical.options.OptionsModel` of its keys (the
  keys of its ``[[routes.steps]]`` table besides ``type`` and ``name``); the site loader
  checks them like an adapter's options and ``docs/configuration.md`` lists them;
* ``__init__(self, options, setup)``: ``options`` is the validated model, ``setup`` a
  :class:`StepSetup` (route name, key path for error messages, the schema registry, the
  expression compiler ``setup.condition(text)`` / ``setup.expression(text)``); raise
  :class:`~coupler.bus.config.loader.ConfigError` (or ``setup.problem(...)``) for options that
  cannot work, so ``coupler daemon --check`` reports them;
* ``process(self, message, ctx) -> Outcome``: one message in, a typed outcome out
  (:mod:`coupler.bus.runtime.steps.outcomes`): :class:`Continue` with the messages that go on
  to the next step (none, one, or many; an iterator streams them, as the splitter does),
  :class:`Deliver` to end the message's path on given channels, :class:`Discard` (counted in
  ``/metrics``), :class:`Retry` later, :class:`DeadLetter` with a cause, :class:`Invalid` with
  a reason. An exception raised by ``process`` is a :class:`Retry` (the channel's redelivery
  policy dead-letters it after ``max_attempts``); a :class:`StepError` is :class:`Invalid`.

The step types are registered through the pluggy hook ``coupler_step_types`` (``{type name:
Step subclass}``); the built-in ones (:mod:`coupler.bus.runtime.steps.builtin`) come through
the same hook from the core plugin :mod:`coupler.bus.runtime.steps.plugin`, and
``coupler plugins`` lists every plugin's step types. ``examples/plugin-step`` is a worked
third-party step.

Transactions and state
----------------------
A route handles one delivery in one transaction of the transport (the consume-and-produce
transaction): everything the steps send, and the acknowledgement of the delivery, commit
together; when any step of any part answers :class:`Retry`, :class:`DeadLetter` or
:class:`Invalid`, nothing of it is sent and the delivery gets that outcome. A crash between
two steps therefore neither loses nor duplicates a message. Where the transport commits step
state with the acknowledgement (SQLite, the storage transports) a route's worker takes up to
100 ready messages and runs them all in one such transaction (one commit); when one of them
stops, the whole transaction is rolled back and each message is handled again alone, so the
outcome of every message is as if it had been alone. ``ctx.scope`` is shared by the messages of
one transaction: ``ctx.defer`` lets a step read its state once and write it once, before the
commit (an Aggregator's group header).

``ctx.tx`` is that transaction (:class:`~coupler.bus.transport.base.TransactionOps`). A step
that keeps state (Aggregator, Resequencer, Process Manager) declares ``stateful = True`` and
reads and writes its state through ``ctx.tx`` (and ``setup.transport`` for what it prepares
once, at start), keyed by ``setup.state_scope`` (``route/step``), so the state changes commit
with the acknowledgement of the message that changed them and a redelivered message never
counts twice. Time-driven work (a completion time-out) goes in ``on_timer(ctx)``, which the
daemon calls every ``timer_seconds`` (class attribute; 0 = never) in a transaction of its
own, and also as soon as the time ``wake_at()`` returns (``time.time()``, None by default) has
come, when the step knows when its work falls due (an Aggregator: the earliest time-out of the
groups this process wrote); what it returns continues from the step after it, like
``process``'s outcome.

Every step of every message is recorded: each message that leaves a step carries a Message
History hop ``route:NAME`` / ``step N TYPE: what it did``, and what a route stores is journaled
by ``route:NAME via STEP > STEP`` (the steps it came through), so ``coupler ctl trace`` and the
console show its path through the pipeline. A discarded message is acknowledged, its journal
entry naming the step and the reason (``discarded by NAME (step N TYPE): REASON``, a filter's
expression: the trace shows why the message ended), counted per step in ``/metrics``
(``coupler_route_step_messages_total``) and logged at debug level with the step and the reason.
"""

from coupler.bus.runtime.steps.base import Step, StepContext, StepError, StepSetup
from coupler.bus.runtime.steps.outcomes import (
    Continue,
    DeadLetter,
    Deliver,
    Discard,
    Invalid,
    Outcome,
    Retry,
)

__all__ = [
    "Continue",
    "DeadLetter",
    "Deliver",
    "Discard",
    "Invalid",
    "Outcome",
    "Retry",
    "Step",
    "StepContext",
    "StepError",
    "StepSetup",
]
