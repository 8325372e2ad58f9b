"""``ActivateDefinitions``: the cluster's activation policies, id ``activate:definitions``.

Crossplane v2's activation-policy controller as a workflow. One per cluster: the watcher
signals it (``look_again``, with signal-with-start) when a policy changes, or an MRD is
added, removed or changed (its state), or a CRD an MRD serves comes or goes; signals during
a pass only mark it dirty. An MRD's CRD written while a policy waits (a policy's
``Established`` follows its CRDs') signals it ``deferrable``: such signals alone start a
pass no sooner than ``Tuning.activation_defer_s``, or than the last pass lasted, after that
pass ended. A pass is one ``activate_definitions`` activity (every policy against every MRD:
which it made Active, for which policy, is in its result, so each activation is in the
history with its time), then a ``look_again`` to each Provider whose revision now has more
Active MRDs, which installs their CRDs and wakes a safe-start runtime. Activation is one
way: nothing here ever makes an MRD Inactive.

A pass that fails is retried with the shared backoff. Continue-as-new at a quiet point;
the durable state is ``ActivationState``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.workflows import singleton
    from lockwright.workflows.calls import call, classify
    from lockwright.workflows.retry import loop_backoff


@workflow.defn
class ActivateDefinitions:
    """Applies every activation policy whenever policies or MRDs change."""

    @workflow.init
    def __init__(self, inp: c.ActivationInput) -> None:
        self._inp = inp
        self.state = inp.state or c.ActivationState()
        self.idle = False

    @workflow.run
    async def run(self, inp: c.ActivationInput) -> c.ActivationResult:
        """Loop: wait for a signal (or a retry), activate, continue as new when suggested."""
        while True:
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(replace(inp, state=self.state))
            await self._wait_for_work()
            started = workflow.now()
            await self._activate_once()
            self._defer_from(started)

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """A policy, an MRD or an MRD's CRD changed: look again; an MRD's CRD written while
        a policy waits (``deferrable``): look again, but no sooner than the deferral."""
        if inp.deferrable:
            self.state = replace(self.state, deferred=True,
                                 signals_seen=self.state.signals_seen + 1)
        else:
            self.state = singleton.rung(self.state)

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.ActivationStatusResult:
        """The passes so far, in brief."""
        s = self.state
        return c.ActivationStatusResult(passes=s.passes, signals_seen=s.signals_seen,
                                        idle=self.idle, activated=s.activated,
                                        retry_attempt=s.retry_attempt,
                                        last_message=s.last_message)

    async def _wait_for_work(self) -> None:
        """As every singleton waits, but deferrable signals alone start a pass only once
        the deferral since the last pass is over, or at a signal not to defer
        (docs/design.md, "Activation passes deferred while a policy waits")."""
        if not self.state.dirty and not self.state.wake_after_s:
            self.idle = True
            await workflow.wait_condition(lambda: self.state.dirty or self.state.deferred)
            self.idle = False
            await self._wait_out_the_deferral()
        await singleton.wait_for_work(self, "activate again after a failure")
        self.state = replace(self.state, deferred=False)

    async def _wait_out_the_deferral(self) -> None:
        wait = self.state.deferred_until - workflow.now().timestamp()
        if not self.state.dirty and wait > 0:
            try:
                await workflow.wait_condition(
                    lambda: self.state.dirty, timeout=timedelta(seconds=wait),
                    timeout_summary="deferred: CRDs written while a policy waits")
            except TimeoutError:
                pass  # the deferral is over: the deferrable signals' pass
        self.state = replace(self.state, dirty=True)

    def _defer_from(self, started: datetime) -> None:
        """Deferrable signals' next pass: the deferral, or as long as this pass took,
        after its end."""
        now = workflow.now()
        defer = max(self._inp.tuning.activation_defer_s, (now - started).total_seconds())
        self.state = replace(self.state, deferred_until=now.timestamp() + defer)

    async def _activate_once(self) -> None:
        try:
            done = await call(c.ACTIVATE_DEFINITIONS, c.ActivateDefinitionsInput(),
                              c.ActivateDefinitionsResult, "apply the activation policies",
                              self._inp.tuning)
        except ActivityError as err:
            singleton.retry_later(self, self._inp.tuning, classify(err).message, "activation")
            return
        await singleton.tell(done.packages,
                             "ManagedResourceDefinitions of its revision were activated")
        attempt = self.state.retry_attempt + 1 if done.failed else 0
        wake = loop_backoff(self._inp.tuning, attempt).total_seconds() if done.failed else 0.0
        self.state = replace(self.state, activated=self.state.activated + done.activated_count,
                             retry_attempt=attempt, wake_after_s=wake,
                             last_message=done.message[:500])
        workflow.set_current_details(_details(done))


def _details(done: c.ActivateDefinitionsResult) -> str:
    """Current details: the last pass, in Markdown."""
    head = (f"**{done.policies} policies** over {done.definitions} MRDs: activated "
            f"{done.activated_count}, failed {done.failed}, told {len(done.packages)} "
            "providers")
    lines = [head] + [f"- `{a.definition}` by policy `{a.policy}`" for a in done.activated[:20]]
    if done.message:
        lines.append(f"- **failed**: {done.message[:300]}")
    return "\n".join(lines)
