"""Process Manager (a small one): a declared sequence of requests to other systems, one after
the other, each with the answers of those before it; its state per instance in the store.

The common "ask A, then B with A's answer, then write C" flow::

    [[routes]]
    name = "orders"
    from = "orders.in"
    to = ["orders.to-write"]          # C: the outbound adapter of this channel writes the result
    [[routes.steps]]
    type = "process"
    key = "body.order_id"             # the instance (default: the message id)
    stages = [
      { name = "credit", target = "credit-check", operation = "check", into = "credit" },
      { name = "price", target = "pricing", operation = "price", fields = { total = "amount" } },
    ]

Each stage sends the ``request`` command to its adapter with the message as it is by then
(the answers of the stages before merged in, as the Content Enricher merges: ``into`` /
``fields``) and waits, in the store, for the answer; the step's timer takes the answers off
its reply channel and starts the next stage. After the last stage the message goes on from
the next step. A stage unanswered after ``timeout_seconds`` is asked again; after
``max_attempts``, or on a fault answer, the instance fails: its message goes to ``failed_to``
(or the Invalid Message Channel) with the stage and the cause. A finished or failed instance is
kept for ``keep_seconds`` so the console shows how it ended; a message for an instance that
runs already is discarded (counted as ``duplicate``).
"""

from __future__ import annotations

import base64
import time
from typing import Any

from coupler.bus.config.models import Channel
from coupler.bus.model.commands import parse_reply
from coupler.bus.model.selectors import Expression, SelectorError
from coupler.bus.transport.base import TransactionOps
from coupler.bus.transport.codec import decode, encode
from coupler.canonical import Envelope
from coupler.canonical.errors import CouplerError
from coupler.canonical.options import Int, Num, OptionsModel, Str, option

from .base import Step, StepContext, StepError, StepSetup
from .enrich import Enricher, EnrichOptions
from .outcomes import Continue, Discard, Outcome
from .state import StepState


class StageOptions(OptionsModel):
    name: Str = option("The stage's name (console, history).")
    target: Str = option("The adapter asked with the `request` command.")
    operation: Str = option("The `request` command's operation.", default="")
    into: Str | None = option("The body field that gets the whole answer.", default=None)
    fields: dict[str, Str] = option("Body field -> field of the answer.", default_factory=dict)
    timeout_seconds: Num = option("How long the answer is waited for before asking again.", default=30.0, gt=0)
    max_attempts: Int = option("Requests sent before the instance fails.", default=3, ge=1)


class ProcessOptions(OptionsModel):
    key: Str | None = option("The instance key: an expression (default: the message id).", default=None)
    stages: list[StageOptions] = option("The stages, in order.", min_length=1)
    commands_channel: Channel = option("The command dispatcher's channel (`[commands] channel`).",
                                       default="coupler.commands")
    reply_channel: Channel | None = option("Where the answers come back (default: `process.ROUTE.STEP`).", default=None)
    failed_to: Channel | None = option("Where the message of a failed instance goes (default: the Invalid Message "
                                       "Channel).", default=None)
    keep_seconds: Num = option("How long a finished or failed instance stays visible.", default=3600.0, gt=0)


class ProcessManager(Step):
    """Process Manager: a declared sequence of `stages`, each a request to an adapter with the message as
    the answers before it left it; each instance (`key`) and its stage kept in the store and shown on the
    console; after the last stage the message goes on. See docs/stateful-patterns.md."""

    type_name = "process"
    options_model = ProcessOptions
    stateful = True

    def __init__(self, options: ProcessOptions, setup: StepSetup):
        super().__init__(options, setup)
        o = options
        self.key: Expression | None = setup.expression(o.key, "key") if o.key else None
        self.state = StepState(setup.state_scope)
        self.reply_channel = o.reply_channel or f"process.{setup.route}.{setup.name}".replace("_", "-")
        self.stages: list[Enricher] = []
        names = [s.name for s in o.stages]
        if len(set(names)) < len(names):
            raise setup.problem("stages", f"stage names repeat: {', '.join(names)}")
        for i, stage in enumerate(o.stages):
            try:
                eo = EnrichOptions(target=stage.target, operation=stage.operation, into=stage.into, fields=stage.fields,
                                   timeout_seconds=stage.timeout_seconds, max_attempts=stage.max_attempts)
            except ValueError as exc:
                raise setup.problem(f"stages[{i}]", str(exc).splitlines()[-1]) from None
            self.stages.append(Enricher(eo, setup))
        self.timer_seconds = min(min(s.timeout_seconds for s in o.stages) / 4, 0.5)
        self.counts = {"finished": 0, "failed": 0}

    def describe(self) -> str:
        return "process " + " -> ".join(s.name for s in self.options.stages)

    def _key_of(self, message: Envelope) -> str:
        if self.key is None:
            return message.message_id
        try:
            key = self.key.text_of(message)
        except SelectorError as exc:
            raise StepError(f"no instance key: {exc}") from None
        if not key:
            raise StepError(f"message {message.message_id} has no {self.key.text}")
        return key

    # -- one message starts an instance ---------------------------------------------------

    def process(self, message: Envelope, ctx: StepContext) -> Outcome:
        key = self._key_of(message)
        if ctx.test:
            return Continue((), f"would start instance {key} at {self.options.stages[0].name}")
        tx = ctx.tx
        instance = self.state.get_json(tx, "instances", key, lock=True)
        if not self.state.first_time(tx, message):
            return Continue((), f"counted before (redelivered): instance {key}")
        if instance is not None and instance["status"] == "running":
            return Discard(f"instance {key} runs already (at {instance['stage_name']})", counter="duplicate")
        now = time.time()
        instance = {"status": "running", "stage": 0, "stage_name": self.options.stages[0].name, "started": now,
                    "history": [], "message": base64.b64encode(encode(message)).decode("ascii")}
        self._ask(tx, key, instance, message, 1)
        return Continue((), f"instance {key} started: asking {self.options.stages[0].target}")

    def _ask(self, tx: TransactionOps, key: str, instance: dict[str, Any], message: Envelope, attempt: int) -> None:
        from coupler.bus.model.commands import Document, command_envelope

        stage = self.options.stages[instance["stage"]]
        request = command_envelope("request", stage.target, document=Document.from_envelope(message),
                                   operation=stage.operation, timeout=stage.timeout_seconds,
                                   return_address=self.reply_channel, correlation_id=message.message_id)
        instance.update(request=request.message_id, sent=time.time(), attempt=attempt,
                        message=base64.b64encode(encode(message)).decode("ascii"))
        self.state.put_json(tx, "instances", key, instance)
        self.state.put_json(tx, "requests", request.message_id, key)
        tx.send(self.options.commands_channel, request, component=f"route:{self.setup.route}")

    # -- answers, time-outs ---------------------------------------------------------------

    def on_timer(self, ctx: StepContext) -> Outcome | None:
        tx = ctx.tx
        out: list[Envelope] = []
        for d in tx.receive(self.reply_channel, f"route:{self.setup.route}", max=200):
            tx.ack(d)
            request_id = d.envelope.correlation_id or ""
            key = self.state.get_json(tx, "requests", request_id)
            if key is None:
                continue
            self.state.put_json(tx, "requests", request_id, None)
            instance = self.state.get_json(tx, "instances", key, lock=True)
            if instance is None or instance["status"] != "running" or instance.get("request") != request_id:
                continue  # answered before, or asked again meanwhile
            finished = self._answered(tx, key, instance, d.envelope)
            if finished is not None:
                out.append(finished)
        now = time.time()
        for key, instance in self.state.all_json(tx, "instances").items():
            stage = self.options.stages[instance["stage"]]
            if instance["status"] != "running" or now < instance["sent"] + stage.timeout_seconds:
                continue
            instance = self.state.get_json(tx, "instances", key, lock=True)
            if instance is None or instance["status"] != "running" or now < instance["sent"] + stage.timeout_seconds:
                continue
            self.state.put_json(tx, "requests", instance["request"], None)
            message = decode(base64.b64decode(instance["message"]))
            if instance["attempt"] >= stage.max_attempts:
                self._fail(tx, key, instance, message, f"no answer from {stage.target} to {instance['attempt']} "
                                                      f"request(s) within {stage.timeout_seconds:g} s each")
            else:
                self._ask(tx, key, instance, message, instance["attempt"] + 1)
        return Continue(out, "process finished") if out else None

    def _answered(self, tx: TransactionOps, key: str, instance: dict[str, Any], reply_env: Envelope) -> Envelope | None:
        i = instance["stage"]
        stage, merger = self.options.stages[i], self.stages[i]
        message = decode(base64.b64decode(instance["message"]))
        try:
            reply = parse_reply(reply_env)
            if not reply.ok:
                raise StepError(f"{stage.target} answered {reply.code}: {reply.reason}")
            if not reply.documents:
                raise StepError(f"{stage.target} answered without a document")
            message = merger.merge(message, merger.body_record(reply.documents[0].to_envelope()))
        except CouplerError as exc:
            self._fail(tx, key, instance, message, str(exc))
            return None
        instance["history"].append({"stage": stage.name, "answered_at": time.time(), "attempts": instance["attempt"]})
        if i + 1 < len(self.options.stages):
            instance.update(stage=i + 1, stage_name=self.options.stages[i + 1].name)
            self._ask(tx, key, instance, message, 1)
            return None
        instance.update(status="finished", finished=time.time(), message="")
        self.state.put_json(tx, "instances", key, instance, ttl=self.options.keep_seconds)
        self.counts["finished"] += 1
        return message.replace(properties={**message.properties, "process.instance": key})

    def _fail(self, tx: TransactionOps, key: str, instance: dict[str, Any], message: Envelope, cause: str) -> None:
        stage = instance["stage_name"]
        instance.update(status="failed", finished=time.time(), cause=cause, message="")
        self.state.put_json(tx, "instances", key, instance, ttl=self.options.keep_seconds)
        self.counts["failed"] += 1
        where = f"route:{self.setup.route}"
        text = f"instance {key} failed at stage {stage}: {cause}"
        if self.options.failed_to:
            tx.send(self.options.failed_to, message.replace(properties={**message.properties, "process.failed": text}),
                    component=where)
        else:
            tx.invalid_later(message, f"{self.label}: {text}", where)  # the id not wanted: sent with the commit

    def open_groups(self, tx: TransactionOps) -> list[dict[str, Any]]:
        """Every instance (running, finished, failed): key, stage, status, age (console)."""
        now = time.time()
        return [{"key": k, "size": i["stage"] + (1 if i["status"] == "finished" else 0), "stage": i["stage_name"],
                 "status": i["status"], "attempt": i.get("attempt", 1), "age_seconds": round(now - i["started"], 3),
                 "cause": i.get("cause")}
                for k, i in sorted(self.state.all_json(tx, "instances").items())]


__all__ = ["ProcessManager", "ProcessOptions", "StageOptions"]
