"""The notice to a hosting provider's or a registrar's abuse desk (issue 41, part 3): one
notice per recipient, naming every site of that recipient with a section each.

An abuse desk answers a notice in its usual form (a DMCA notice, or the form of the
Regulations on the Protection of the Right to Network Dissemination of Information): who
complains and for whom, the party's role stated ("you host" / "you are the registrar of"),
each site with its domain and addresses, each infringing URL with the work it copies, when
it was first seen, an excerpt and the link to its evidence record, then the good-faith and
accuracy statements the operator's notice has (:mod:`admin.report.takedown`), and the
complainant's contact. The text is fixed here (bilingual, as the operator's default): the
editable template is the operator's.

:func:`abuse_notice` is pure: the same sections give the same text. Its HTML variant
escapes every value (crawled URLs and excerpts are hostile) and keeps the text's layout,
for the admin's preview; the email is the text variant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from markupsafe import escape

from admin.report.takedown import PLACEHOLDERS
from matcher.evidence.recipients import Address

ROLE_LINES = {
    "host": (
        "贵方为下列网站提供托管服务（其网址解析到贵方网络的地址）。",
        "You host the following site(s): their addresses below are in your network.",
        "请删除下列侵权内容或断开链接，并将本通知转交贵方客户。",
        "Please remove or disable access to the material below, and forward this notice to "
        "your customer.",
    ),
    "registrar": (
        "贵方为下列网站域名的注册服务机构。",
        "You are the registrar of the domain(s) of the following site(s).",
        "请依据贵方的滥用处理政策处理，并将本通知转交域名持有人。",
        "Please act under your abuse policy and forward this notice to the registrant "
        "of each domain.",
    ),
}
SUBJECTS = {
    "host": "侵权通知（托管服务商）/ Copyright infringement notice to the host",
    "registrar": "侵权通知（域名注册商）/ Copyright infringement notice to the registrar",
}


@dataclass(frozen=True)
class SiteSection:
    """One site of a notice: its name, host name, domain, addresses and notice items
    (:func:`admin.report.takedown.notice_items`' lines, each with ``evidence_link``)."""

    site: str
    host: str = ""
    domain: str = ""
    addresses: tuple[str, ...] = ()
    items: Sequence[dict[str, str]] = field(default_factory=tuple)


def subject(kind: str, sections: Sequence[SiteSection]) -> str:
    """The email's subject: the recipient's role and the sites named."""
    names = ", ".join(s.site for s in sections[:5]) + (" …" if len(sections) > 5 else "")
    return f"{SUBJECTS[kind]}: {names}"


def abuse_notice(
    kind: str,
    to: Address,
    sections: Sequence[SiteSection],
    details: dict[str, str],
    today: date,
    *,
    html: bool,
) -> str:
    """The notice to ``to`` (a ``host`` or ``registrar``) naming ``sections``, signed with
    ``details`` (``rights_holder``, ``contact``; a placeholder of
    :data:`admin.report.takedown.PLACEHOLDERS` when unset, so that the notice is not ready);
    every value escaped when ``html``."""
    if kind not in ROLE_LINES:
        raise ValueError(f"an abuse notice goes to a host or a registrar, not {kind!r}")
    e: Callable[[str], str] = (lambda v: str(escape(v))) if html else str
    holder = e(details.get("rights_holder") or PLACEHOLDERS["rights_holder"])
    contact = e(details.get("contact") or PLACEHOLDERS["contact"])
    role_zh, role_en, ask_zh, ask_en = ROLE_LINES[kind]
    party = " ".join(p for p in (to.name, f"<{to.email}>" if to.email else "") if p)
    works = sorted({i["work"] for s in sections for i in s.items})
    count = sum(len(s.items) for s in sections)
    lines = [
        e(SUBJECTS[kind]),
        "",
        f"日期 / Date: {today.isoformat()}",
        f"致 / To: {e(party) or e(kind)}（滥用投诉 / abuse desk）",
        f"发件人 / From: {holder}",
        "",
        role_zh,
        role_en,
        "",
        f"{holder} 是下列作品的著作权人或其授权代表。下列网页未经许可复制、传播了这些作品。",
        f"{holder} owns, or is authorised to act for the owner of, the copyright in the works "
        "listed below. The pages below reproduce and distribute these works without "
        "permission.",
        ask_zh,
        ask_en,
        "",
        f"作品 / Works: {'；'.join(e(w) for w in works)}",
        f"网站 / Sites: {len(sections)}; 侵权网址 / Infringing URLs: {count}",
    ]
    for n, section in enumerate(sections, 1):
        lines += ["", f"== {n}. 网站 / Site: {e(section.site)} =="]
        if section.host:
            lines.append(f"   主机 / Host: {e(section.host)}")
        if section.domain:
            lines.append(f"   域名 / Domain: {e(section.domain)}")
        if section.addresses:
            lines.append(f"   地址 / IP addresses: {e(', '.join(section.addresses))}")
        for i, item in enumerate(section.items, 1):
            lines += [
                f"   {n}.{i} {e(item['url'])}",
                f"       作品 / Work: {e(item['work'])}",
                f"       首次发现 / First seen: {e(item['first_seen'])}",
                f"       证据摘录 / Evidence: {e(item['excerpt'])}",
            ]
            if item.get("evidence_link"):
                lines.append(f"       证据记录 / Evidence record: {e(item['evidence_link'])}")
    lines += [
        "",
        "本人善意地相信，上述使用方式未经著作权人、其代理人或法律许可。",
        "I have a good faith belief that use of the material in the manner complained of is "
        "not authorised by the copyright owner, its agent, or the law.",
        "本人保证本通知内容真实、准确，并有权代表著作权人发出本通知。",
        "I state that the information in this notice is accurate, and, under penalty of "
        "perjury, that I am authorised to act on behalf of the owner of the rights infringed.",
        "",
        f"联系方式 / Contact: {contact}",
        holder,
        today.isoformat(),
    ]
    return "\n".join(lines) + "\n"
