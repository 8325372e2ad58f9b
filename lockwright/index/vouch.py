"""What a signed index vouches for: the digest it lists, not the tag beside it.

An index entry names a repository, a tag and the digest the tag pointed to when the index
was built and signed. The signature covers the digest; a tag can be pushed again at any
time. So whatever lockwright installs from an index is installed by that digest
(:func:`pinned`), and a tag that points elsewhere now is said, naming both digests and the
fix (:func:`moved`), by ``lockwright search`` (a warning) and ``install --api`` (a refusal:
nothing is installed from a tag the index does not vouch for).

``spec.package`` is ``repository:tag@digest``: Crossplane's CEL rule accepts a tag and a
digest together (docs/crossplane.md §2.1), the registry is asked for the digest only (a
digest decides what is fetched, the tag is kept for people, as go-containerregistry and
:class:`lockwright.oci.reference.Reference` read it), the Lock's ``version`` is the digest
as Crossplane writes it (docs/crossplane.md §5), and ``kubectl get providers`` still shows
which version it is.
"""

from __future__ import annotations

from lockwright.index.model import Entry


def pinned(entry: Entry) -> str:
    """``repository:tag@digest``: the version the index lists, fetched by its digest."""
    return f"{entry.repository}:{entry.tag}@{entry.digest}"


def unlisted(entry: Entry) -> str:
    """Why an entry without a digest cannot be installed from the index ("" if it has one)."""
    if entry.digest:
        return ""
    return (f"{entry.reference}: the index {entry.index} lists no digest for it, so it "
            "vouches for no content: rebuild the index with lockwright index build")


def moved(entry: Entry, current: str) -> str:
    """Why the tag no longer is what the index listed ("" while it is).

    Args:
        entry: the index's entry.
        current: the digest the registry gives for the entry's tag now ("" when the tag is
            gone: the listed digest is still what the index vouches for).
    """
    if not current or current == entry.digest:
        return ""
    return (f"{entry.reference} now points to {current}, but the index {entry.index} lists "
            f"{entry.digest}: the tag was pushed again after the index was signed, and "
            "lockwright installs only what the signed index lists; to install the new "
            "content, build, push and sign the index again (lockwright index build, index "
            f"push); to install what the index lists, install {entry.repository}@"
            f"{entry.digest} by reference")
