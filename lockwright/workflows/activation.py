"""``ActivateDefinitions``: the cluster's activation policies, id ``activate:definitions``.

Crossplane v2's activation-policy controller as a workflow. One per cluster: the watcher
signals it (``look_again``, with signal-with-start) when a policy changes, or an MRD is
added, removed or changed (its state), or a CRD an MRD serves comes or goes; signals during
a pass only mark it dirty. A pass is one ``activate_definitions`` activity (every policy
against every MRD: which it made Active, for which policy, is in its result, so each
activation is in the history with its time), then a ``look_again`` to each Provider whose
revision now has more Active MRDs, which installs their CRDs and wakes a safe-start runtime.
Activation is one way: nothing here ever makes an MRD Inactive.

A pass that fails is retried with the shared backoff. Continue-as-new at a quiet point;
the durable state is ``ActivationState``.
"""

from __future__ import annotations

from dataclasses import replace

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
            await singleton.wait_for_work(self, "activate again after a failure")
            await self._activate_once()

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """A policy, an MRD or an MRD's CRD changed: look again."""
        self.state = singleton.rung(self.state)

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.ActivationStatusResult:
        """The passes so far, in brief."""
        s = self.state
        return c.ActivationStatusResult(passes=s.passes, signals_seen=s.signals_seen,
                                        idle=self.idle, activated=s.activated,
                                        retry_attempt=s.retry_attempt,
                                        last_message=s.last_message)

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
