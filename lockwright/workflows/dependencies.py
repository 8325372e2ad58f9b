"""``ResolveDependencies``: the cluster's one dependency resolution, id ``resolve:lock``.

Crossplane's Lock reconciler, as a workflow (docs/crossplane.md §12). One per cluster, so
resolutions never race: the watcher signals it (``look_again``, with signal-with-start)
when the Lock or any package changes, and signals arriving during a pass only mark it
dirty, so a burst of changes costs one more pass, not one each.

A pass is two steps. ``resolve_dependencies`` reads the Lock, the packages and what the
registries offer, and returns the decision with its inputs in brief (counts, names and
versions, never package contents): the packages to create or move, and the revisions
with no solution, each with the chain that explains it. ``apply_resolution`` carries it
out and writes the Lock's ``Resolved`` condition. Then every package whose revision's
dependency status the Lock has made out of date is signalled to look again, so a
Configuration waiting for its Provider becomes healthy without anyone touching it.

A pass that fails on the registry or the API is retried with the shared backoff; a
decision that failed on the registry (a tag list refused) is taken again later the same
way. Continue-as-new at a quiet point; the durable state is ``ResolveState``.
"""

from __future__ import annotations

from dataclasses import replace

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from lockwright import contracts as c
    from lockwright.contracts import metrics
    from lockwright.workflows import singleton
    from lockwright.workflows.calls import call, classify
    from lockwright.workflows.retry import loop_backoff


@workflow.defn
class ResolveDependencies:
    """Resolves the package graph whenever it may have changed; runs as long as the cluster."""

    @workflow.init
    def __init__(self, inp: c.ResolveInput) -> None:
        self._inp = inp
        self.state = inp.state or c.ResolveState()
        self.idle = False

    @workflow.run
    async def run(self, inp: c.ResolveInput) -> c.ResolveResult:
        """Loop: wait for a signal (or a retry), resolve, continue as new when suggested."""
        while True:
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(replace(inp, state=self.state))
            await singleton.wait_for_work(self, "resolve again after a failure")
            await self._resolve_once()

    @workflow.signal(name=c.SIGNAL_LOOK_AGAIN)
    def look_again(self, inp: c.LookAgainInput) -> None:
        """The Lock or a package changed: resolve again."""
        self.state = singleton.rung(self.state)

    @workflow.query(name=c.QUERY_STATUS)
    def status(self) -> c.ResolveStatusResult:
        """The last decision in brief."""
        s = self.state
        return c.ResolveStatusResult(passes=s.passes, signals_seen=s.signals_seen,
                                     idle=self.idle, resolved=s.resolved, created=s.created,
                                     moved=s.moved, last_message=s.last_message,
                                     retry_attempt=s.retry_attempt)

    async def _resolve_once(self) -> None:
        try:
            decided = await self._decide()
            applied = await self._apply(decided)
        except ActivityError as err:
            singleton.retry_later(self, self._inp.tuning, classify(err).message, "resolution")
            metrics.resolution_failed(workflow.metric_meter(), "error")
            return
        await singleton.tell(decided.nudge, "its dependencies changed in the Lock")
        self._record(decided, applied)

    async def _decide(self) -> c.ResolveDependenciesResult:
        return await call(c.RESOLVE_DEPENDENCIES, c.ResolveDependenciesInput(),
                          c.ResolveDependenciesResult, "resolve the package graph",
                          self._inp.tuning)

    async def _apply(self, decided: c.ResolveDependenciesResult) -> c.ApplyResolutionResult:
        if not decided.changes and not decided.lock_stale:
            return c.ApplyResolutionResult()
        return await call(c.APPLY_RESOLUTION, c.ApplyResolutionInput(
            changes=decided.changes, unresolved=decided.unresolved), c.ApplyResolutionResult,
            _summary(decided), self._inp.tuning)

    def _record(self, decided: c.ResolveDependenciesResult,
                applied: c.ApplyResolutionResult) -> None:
        s = self.state
        attempt = s.retry_attempt + 1 if decided.retry else 0
        wake = loop_backoff(self._inp.tuning, attempt).total_seconds() if decided.retry else 0.0
        message = "; ".join(u.message for u in decided.unresolved)
        if decided.unresolved:
            metrics.resolution_failed(workflow.metric_meter(), "unresolved")
        self.state = replace(s, resolved=not decided.unresolved, retry_attempt=attempt,
                             wake_after_s=wake, created=s.created + len(applied.created),
                             moved=s.moved + len(applied.moved), last_message=message[:500])
        workflow.set_current_details(_details(decided, applied))


def _summary(decided: c.ResolveDependenciesResult) -> str:
    """The apply step's summary in the UI: what it is about to do."""
    parts = [f"{'create' if not ch.from_version else 'move'} {ch.kind} {ch.name} "
             f"{ch.package}" for ch in decided.changes[:3]]
    more = f" and {len(decided.changes) - 3} more" if len(decided.changes) > 3 else ""
    unresolved = f"; {len(decided.unresolved)} unresolved" if decided.unresolved else ""
    return (", ".join(parts) + more if parts else "write the Lock's status") + unresolved


def _details(decided: c.ResolveDependenciesResult, applied: c.ApplyResolutionResult) -> str:
    """Current details: the decision of the last pass, in Markdown."""
    head = (f"**resolved** {decided.lock_packages} packages in the Lock, "
            f"{decided.dependencies} dependencies, {decided.repositories_listed} repositories "
            f"listed; created {len(applied.created)}, moved {len(applied.moved)}")
    lines = [head] + [f"- created `{p}`" for p in applied.created[:10]]
    lines += [f"- moved to `{p}`" for p in applied.moved[:10]]
    lines += [f"- **unresolved** {', '.join(u.revisions)}: {u.message[:300]}"
              for u in decided.unresolved[:10]]
    return "\n".join(lines)
