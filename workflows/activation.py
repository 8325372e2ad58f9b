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

import asyncio
from dataclasses import replace
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    import contracts as c
    from workflows.calls import call, classify
    from workflows.retry import loop_backoff


@workflow.defn
class ActivateDefinitions:
    """Applies every activation policy whenever policies or MRDs change."""

    @workflow.init
    def __init__(self, inp: c.ActivationInput) -> None:
        self._inp = inp
        self._s = inp.state or c.ActivationState()
        self._idle = False

    @workflow.run
    async def run(self, inp: c.ActivationInput) -> c.ActivationResult:
        """Loop: wait for a signal (or a retry), activate, continue as new when suggested."""
        while True:
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(replace(inp, state=self._s))
            await self._wait_for_work()
            await self._activate_once()

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """A policy, an MRD or an MRD's CRD changed: look again."""
        self._s = replace(self._s, dirty=True, signals_seen=self._s.signals_seen + 1)

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.ActivationStatusResult:
        """The passes so far, in brief."""
        s = self._s
        return c.ActivationStatusResult(passes=s.passes, signals_seen=s.signals_seen,
                                        idle=self._idle, activated=s.activated,
                                        retry_attempt=s.retry_attempt,
                                        last_message=s.last_message)

    async def _wait_for_work(self) -> None:
        self._idle = not self._s.dirty
        wake = timedelta(seconds=self._s.wake_after_s) if self._s.wake_after_s else None
        try:
            await workflow.wait_condition(lambda: self._s.dirty, timeout=wake,
                                          timeout_summary="activate again after a failure")
        except TimeoutError:
            pass
        self._idle = False
        self._s = replace(self._s, dirty=False, passes=self._s.passes + 1, wake_after_s=0.0)

    async def _activate_once(self) -> None:
        try:
            done = await call(c.ACTIVATE_DEFINITIONS, c.ActivateDefinitionsInput(),
                              c.ActivateDefinitionsResult, "apply the activation policies",
                              self._inp.tuning)
        except ActivityError as err:
            self._retry_later(classify(err).message)
            return
        await asyncio.gather(*(_look_again(ref) for ref in done.packages))
        attempt = self._s.retry_attempt + 1 if done.failed else 0
        wake = loop_backoff(self._inp.tuning, attempt).total_seconds() if done.failed else 0.0
        self._s = replace(self._s, activated=self._s.activated + done.activated_count,
                          retry_attempt=attempt, wake_after_s=wake,
                          last_message=done.message[:500])
        workflow.set_current_details(_details(done))

    def _retry_later(self, message: str) -> None:
        attempt = self._s.retry_attempt + 1
        wake = loop_backoff(self._inp.tuning, attempt)
        self._s = replace(self._s, retry_attempt=attempt, wake_after_s=wake.total_seconds(),
                          last_message=message[:500])
        workflow.logger.warning("activation failed attempt=%d: %s", attempt, message[:200])
        workflow.set_current_details(f"**retrying** in {wake.total_seconds():g}s "
                                     f"(attempt {attempt}): {message[:160]}")


async def _look_again(ref: c.PackageRef) -> None:
    handle = workflow.get_external_workflow_handle(c.package_workflow_id(ref.kind, ref.name))
    try:
        await handle.signal(c.SIGNAL_LOOK_AGAIN, c.LookAgainInput(
            reason="ManagedResourceDefinitions of its revision were activated"))
    except Exception as err:  # noqa: BLE001 - not found or closed: nothing to tell
        workflow.logger.info("could not signal %s: %s", ref.name, err)


def _details(done: c.ActivateDefinitionsResult) -> str:
    """Current details: the last pass, in Markdown."""
    head = (f"**{done.policies} policies** over {done.definitions} MRDs: activated "
            f"{done.activated_count}, failed {done.failed}, told {len(done.packages)} "
            "providers")
    lines = [head] + [f"- `{a.definition}` by policy `{a.policy}`" for a in done.activated[:20]]
    if done.message:
        lines.append(f"- **failed**: {done.message[:300]}")
    return "\n".join(lines)
