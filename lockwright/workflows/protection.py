"""``ProtectProviders``: provider deletion protection, id ``protect:providers``.

Crossplane's provider protection controller as a workflow (docs/design.md, "Provider
deletion protection"). One per cluster: the watcher signals it (``look_again``, with
signal-with-start) when it starts, when a type of a Provider gets its first resource or
loses its last, and when such a type's CRD comes or goes; signals during a pass only mark
it dirty, so a burst of resources costs one pass. A pass is one ``protect_providers``
activity: a usage for each type in use, none for the others, and the admission policy
that reads them (or, with the setting off, none of it).

A pass that fails is retried with the shared backoff. Continue-as-new at a quiet point;
the durable state is ``ProtectionState``.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.workflows import singleton
    from lockwright.workflows.calls import call, classify


@workflow.defn
class ProtectProviders:
    """Keeps one ClusterUsage per Provider type in use, and the policy that reads them."""

    @workflow.init
    def __init__(self, inp: c.ProtectionInput) -> None:
        self._inp = inp
        self.state = inp.state or c.ProtectionState()
        self.idle = False

    @workflow.run
    async def run(self, inp: c.ProtectionInput) -> c.ProtectionResult:
        """Loop: wait for a signal (or a retry), protect, continue as new when suggested."""
        while True:
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(replace(inp, state=self.state))
            await singleton.wait_for_work(self, "protect again after a failure")
            await self._protect_once()

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """A Provider type's resources or CRD changed: look again."""
        self.state = singleton.rung(self.state)

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.ProtectionStatusResult:
        """The passes so far, in brief."""
        s = self.state
        return c.ProtectionStatusResult(passes=s.passes, signals_seen=s.signals_seen,
                                        idle=self.idle, retry_attempt=s.retry_attempt,
                                        last_message=s.last_message)

    async def _protect_once(self) -> None:
        try:
            done = await call(c.PROTECT_PROVIDERS, c.ProtectProvidersInput(),
                              c.ProtectProvidersResult, "protect Providers in use",
                              self._inp.tuning)
        except ActivityError as err:
            singleton.retry_later(self, self._inp.tuning, classify(err).message, "protection")
            return
        self.state = replace(self.state, retry_attempt=0, last_message="")
        workflow.set_current_details(_details(done))


def _details(done: c.ProtectProvidersResult) -> str:
    """Current details: the last pass, in Markdown."""
    if not done.enabled:
        return f"**protection off**: deleted {len(done.deleted)} usages and the policy"
    lines = [f"**{done.in_use} of {done.types} Provider types in use**: applied "
             f"{len(done.applied)} usages, deleted {len(done.deleted)}"]
    return "\n".join(lines + [f"- deleted `{n}`" for n in done.deleted[:20]])
