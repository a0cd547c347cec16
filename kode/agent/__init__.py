"""Agents: templates that list tool names, the tool-call pipeline, permissions, hooks, events."""

from __future__ import annotations

from kode.agent.agent import Agent, AgentError
from kode.agent.context import ContextPolicy
from kode.agent.errors import RunLimitError
from kode.agent.events import (
    AgentEvent,
    ApprovalRequired,
    Compaction,
    Done,
    ErrorEvent,
    ModelRetry,
    PartialOutput,
    TextDelta,
    ThinkingDelta,
    ToolBlockedLoop,
    ToolCustom,
    ToolEnd,
    ToolProgress,
    ToolStart,
    TurnEnd,
)
from kode.agent.hooks import AgentHooks, Allow, Deny, Respond, RewriteInput
from kode.agent.limits import RunLimits, TokenPrices
from kode.agent.permissions import (
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    PermissionConfig,
    PermissionMode,
)
from kode.agent.reply import AgentReply
from kode.agent.rules import PermissionRule, RuleError, load_rules
from kode.agent.run import AgentRun
from kode.agent.state import AgentState, ToolCallRecord
from kode.agent.stream import AgentStream
from kode.agent.template import (
    AgentTemplate,
    PolicyConfig,
    SessionAccess,
    TemplateError,
    TemplateRegistry,
    templates,
)

__all__ = [
    "Agent",
    "AgentError",
    "AgentEvent",
    "AgentHooks",
    "AgentReply",
    "AgentRun",
    "AgentState",
    "AgentStream",
    "AgentTemplate",
    "Allow",
    "ApprovalDecision",
    "ApprovalRequest",
    "ApprovalRequired",
    "Approver",
    "Compaction",
    "ContextPolicy",
    "Deny",
    "Done",
    "ErrorEvent",
    "ModelRetry",
    "PartialOutput",
    "PermissionConfig",
    "PermissionMode",
    "PermissionRule",
    "PolicyConfig",
    "Respond",
    "RewriteInput",
    "RuleError",
    "RunLimitError",
    "RunLimits",
    "SessionAccess",
    "TemplateError",
    "TemplateRegistry",
    "TextDelta",
    "ThinkingDelta",
    "TokenPrices",
    "ToolBlockedLoop",
    "ToolCallRecord",
    "ToolCustom",
    "ToolEnd",
    "ToolProgress",
    "ToolStart",
    "TurnEnd",
    "load_rules",
    "templates",
]
