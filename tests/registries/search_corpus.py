"""The retrieval test set for tool search: over 300 tools and over 100 queries with answers.

The tools are kode's built-ins, the tools of two published MCP servers (their ``tools/list``
captured in ``data/mcp_*.json`` by ``data/capture_mcp.py``) and realistic tools of 25 services
an application would connect (GitHub, Slack, Jira, Stripe, Kubernetes, ...), registered as MCP
tools of those servers. The queries are written as a user or a model would ask, each with the
tools that answer it. ``tests/registries/test_search_recall.py`` asserts recall@5 and
``bench/tool_search.py`` reports it.
"""

from __future__ import annotations

import json
from pathlib import Path

from kode import Tool, ToolRegistry

DATA = Path(__file__).resolve().parent / "data"

# service → (description of the service, [(tool, description, {parameter: description})])
SERVICES: dict[str, list[tuple[str, str, dict[str, str]]]] = {
    "github": [
        (
            "create_issue",
            "Create a new issue in a GitHub repository.",
            {
                "owner": "Repository owner",
                "repo": "Repository name",
                "title": "Issue title",
                "body": "Issue body in markdown",
                "labels": "Labels to apply",
            },
        ),
        (
            "get_issue",
            "Get the details of an issue in a GitHub repository.",
            {
                "owner": "Repository owner",
                "repo": "Repository name",
                "issue_number": "The issue number",
            },
        ),
        (
            "list_issues",
            "List issues in a GitHub repository, filtered by state, labels or assignee.",
            {
                "owner": "Repository owner",
                "repo": "Repository name",
                "state": "open, closed or all",
                "labels": "Filter by labels",
            },
        ),
        (
            "update_issue",
            "Update an existing issue: title, body, state, labels or assignees.",
            {"issue_number": "The issue number", "state": "open or closed", "title": "New title"},
        ),
        (
            "add_issue_comment",
            "Add a comment to an existing issue or pull request.",
            {"issue_number": "The issue number", "body": "Comment text"},
        ),
        (
            "search_issues",
            "Search issues and pull requests across repositories with GitHub's search syntax.",
            {"q": "Search query", "sort": "Sort field"},
        ),
        (
            "create_pull_request",
            "Create a new pull request to merge a head branch into a base branch.",
            {
                "title": "PR title",
                "head": "Branch with the changes",
                "base": "Branch to merge into",
                "body": "PR description",
            },
        ),
        (
            "get_pull_request",
            "Get the details of a specific pull request.",
            {"pull_number": "Pull request number"},
        ),
        (
            "list_pull_requests",
            "List pull requests in a GitHub repository.",
            {"state": "open, closed or all", "base": "Filter by base branch"},
        ),
        (
            "merge_pull_request",
            "Merge a pull request (merge, squash or rebase).",
            {"pull_number": "Pull request number", "merge_method": "merge, squash or rebase"},
        ),
        (
            "create_pull_request_review",
            "Create a review on a pull request: approve, request changes or comment.",
            {
                "pull_number": "Pull request number",
                "event": "APPROVE, REQUEST_CHANGES or COMMENT",
                "body": "Review text",
            },
        ),
        (
            "get_pull_request_files",
            "Get the list of files changed in a pull request.",
            {"pull_number": "Pull request number"},
        ),
        (
            "create_branch",
            "Create a new branch in a GitHub repository.",
            {"branch": "Name of the new branch", "from_branch": "Source branch"},
        ),
        (
            "list_branches",
            "List the branches of a GitHub repository.",
            {"owner": "Repository owner", "repo": "Repository name"},
        ),
        (
            "list_commits",
            "List the commits of a branch in a GitHub repository.",
            {"sha": "Branch name or commit SHA", "author": "Filter by author"},
        ),
        ("get_commit", "Get the details of a commit, with its diff.", {"sha": "Commit SHA"}),
        (
            "create_repository",
            "Create a new GitHub repository in your account.",
            {
                "name": "Repository name",
                "private": "Whether the repository is private",
                "description": "Repository description",
            },
        ),
        (
            "fork_repository",
            "Fork a GitHub repository to your account or an organization.",
            {
                "owner": "Repository owner",
                "repo": "Repository name",
                "organization": "Organization to fork to",
            },
        ),
        ("search_repositories", "Search for GitHub repositories.", {"query": "Search query"}),
        (
            "get_file_contents",
            "Get the contents of a file or directory from a GitHub repository.",
            {"path": "Path to the file or directory", "branch": "Branch to read from"},
        ),
        (
            "create_or_update_file",
            "Create or update a single file in a GitHub repository with a commit.",
            {
                "path": "Path of the file",
                "content": "New content",
                "message": "Commit message",
                "branch": "Branch",
            },
        ),
        (
            "push_files",
            "Push several files to a GitHub repository in a single commit.",
            {"files": "Files to push, each with path and content", "message": "Commit message"},
        ),
        (
            "search_code",
            "Search for code across GitHub repositories.",
            {"q": "Search query with qualifiers like language: or repo:"},
        ),
        (
            "list_releases",
            "List the releases of a GitHub repository.",
            {"owner": "Repository owner", "repo": "Repository name"},
        ),
        (
            "create_release",
            "Create a release from a tag, with release notes.",
            {"tag_name": "The tag", "name": "Release title", "body": "Release notes"},
        ),
        (
            "list_workflow_runs",
            "List GitHub Actions workflow runs of a repository.",
            {"workflow_id": "Workflow file name or id", "status": "Filter by status"},
        ),
        ("rerun_workflow", "Re-run a GitHub Actions workflow run.", {"run_id": "Workflow run id"}),
        (
            "get_workflow_run_logs",
            "Download the logs of a GitHub Actions workflow run.",
            {"run_id": "Workflow run id"},
        ),
        (
            "list_labels",
            "List the labels defined in a GitHub repository.",
            {"owner": "Repository owner", "repo": "Repository name"},
        ),
        (
            "add_labels_to_issue",
            "Add labels to an issue or pull request.",
            {"issue_number": "The issue number", "labels": "Labels to add"},
        ),
        ("search_users", "Search for GitHub users.", {"q": "Search query"}),
        (
            "list_notifications",
            "List your GitHub notifications.",
            {"all": "Include notifications already read"},
        ),
    ],
    "slack": [
        (
            "post_message",
            "Post a new message to a Slack channel.",
            {"channel_id": "The channel", "text": "Message text"},
        ),
        (
            "reply_to_thread",
            "Reply to a specific message thread in Slack.",
            {
                "channel_id": "The channel",
                "thread_ts": "Timestamp of the parent message",
                "text": "Reply text",
            },
        ),
        (
            "add_reaction",
            "Add an emoji reaction to a Slack message.",
            {
                "channel_id": "The channel",
                "timestamp": "Message timestamp",
                "reaction": "Emoji name",
            },
        ),
        (
            "list_channels",
            "List the public channels of the Slack workspace.",
            {"limit": "Maximum number of channels"},
        ),
        (
            "get_channel_history",
            "Get recent messages from a Slack channel.",
            {"channel_id": "The channel", "limit": "Number of messages"},
        ),
        (
            "get_thread_replies",
            "Get all replies in a Slack message thread.",
            {"channel_id": "The channel", "thread_ts": "Timestamp of the parent message"},
        ),
        (
            "get_users",
            "List the users of the Slack workspace with basic profile information.",
            {"limit": "Maximum number of users"},
        ),
        ("get_user_profile", "Get the detailed profile of a Slack user.", {"user_id": "The user"}),
        (
            "create_channel",
            "Create a new Slack channel.",
            {"name": "Channel name", "is_private": "Create a private channel"},
        ),
        ("archive_channel", "Archive a Slack channel.", {"channel_id": "The channel"}),
        (
            "invite_to_channel",
            "Invite users to a Slack channel.",
            {"channel_id": "The channel", "users": "User ids to invite"},
        ),
        (
            "upload_file",
            "Upload a file to a Slack channel.",
            {
                "channels": "Channels to share it in",
                "filename": "File name",
                "content": "File content",
            },
        ),
        (
            "search_messages",
            "Search messages across the Slack workspace.",
            {"query": "Search query"},
        ),
        (
            "set_channel_topic",
            "Set the topic of a Slack channel.",
            {"channel_id": "The channel", "topic": "New topic"},
        ),
        (
            "schedule_message",
            "Schedule a Slack message to be sent later.",
            {
                "channel_id": "The channel",
                "text": "Message text",
                "post_at": "Unix time to send at",
            },
        ),
        (
            "delete_message",
            "Delete a message from a Slack channel.",
            {"channel_id": "The channel", "ts": "Message timestamp"},
        ),
        (
            "update_message",
            "Edit the text of a Slack message that was already posted.",
            {"channel_id": "The channel", "ts": "Message timestamp", "text": "New text"},
        ),
        (
            "pin_message",
            "Pin a message to a Slack channel.",
            {"channel_id": "The channel", "timestamp": "Message timestamp"},
        ),
    ],
    "jira": [
        (
            "create_issue",
            "Create a Jira issue (story, task or bug) in a project.",
            {
                "project_key": "Project key",
                "summary": "Issue summary",
                "issue_type": "Story, Task or Bug",
                "description": "Issue description",
            },
        ),
        ("get_issue", "Get a Jira issue by its key.", {"issue_key": "Issue key, e.g. PROJ-123"}),
        (
            "search_issues",
            "Search Jira issues with a JQL query.",
            {"jql": "JQL query", "max_results": "Maximum results"},
        ),
        (
            "update_issue",
            "Update the fields of a Jira issue.",
            {"issue_key": "Issue key", "fields": "Fields to set"},
        ),
        (
            "transition_issue",
            "Move a Jira issue to another status (To Do, In Progress, Done).",
            {"issue_key": "Issue key", "transition_id": "Transition to apply"},
        ),
        (
            "add_comment",
            "Add a comment to a Jira issue.",
            {"issue_key": "Issue key", "body": "Comment text"},
        ),
        (
            "assign_issue",
            "Assign a Jira issue to a user.",
            {"issue_key": "Issue key", "account_id": "The assignee"},
        ),
        ("list_projects", "List the Jira projects you can see.", {}),
        ("get_project", "Get the details of a Jira project.", {"project_key": "Project key"}),
        (
            "create_sprint",
            "Create a sprint on a Jira Scrum board.",
            {
                "board_id": "The board",
                "name": "Sprint name",
                "start_date": "Start date",
                "end_date": "End date",
            },
        ),
        (
            "list_sprints",
            "List the sprints of a Jira board.",
            {"board_id": "The board", "state": "active, future or closed"},
        ),
        (
            "move_issues_to_sprint",
            "Move Jira issues into a sprint.",
            {"sprint_id": "The sprint", "issue_keys": "Issues to move"},
        ),
        (
            "log_work",
            "Log time spent on a Jira issue.",
            {"issue_key": "Issue key", "time_spent": "Time spent, e.g. 2h 30m"},
        ),
        (
            "link_issues",
            "Link two Jira issues (blocks, relates to, duplicates).",
            {
                "inward_issue": "First issue",
                "outward_issue": "Second issue",
                "link_type": "Link type",
            },
        ),
        (
            "get_transitions",
            "List the status transitions available for a Jira issue.",
            {"issue_key": "Issue key"},
        ),
        (
            "add_attachment",
            "Attach a file to a Jira issue.",
            {"issue_key": "Issue key", "file_path": "File to attach"},
        ),
    ],
    "google_calendar": [
        (
            "list_events",
            "List events in a Google Calendar between two times.",
            {
                "calendar_id": "The calendar",
                "time_min": "Start of the range",
                "time_max": "End of the range",
            },
        ),
        (
            "create_event",
            "Create an event in Google Calendar with attendees, time and location.",
            {
                "summary": "Event title",
                "start": "Start time",
                "end": "End time",
                "attendees": "Emails of attendees",
                "location": "Where",
            },
        ),
        (
            "update_event",
            "Update an existing Google Calendar event.",
            {"event_id": "The event", "summary": "New title", "start": "New start time"},
        ),
        ("delete_event", "Delete an event from Google Calendar.", {"event_id": "The event"}),
        (
            "find_free_time",
            "Find free time slots shared by several calendars.",
            {"calendars": "Calendars to check", "duration_minutes": "Length of the slot"},
        ),
        ("list_calendars", "List the calendars of the user.", {}),
        (
            "respond_to_event",
            "Accept, decline or tentatively accept an event invitation.",
            {"event_id": "The event", "response": "accepted, declined or tentative"},
        ),
        ("get_event", "Get the details of a Google Calendar event.", {"event_id": "The event"}),
        (
            "quick_add_event",
            "Create an event from a sentence such as 'Lunch with Ana tomorrow at noon'.",
            {"text": "The sentence"},
        ),
        ("list_colors", "List the colors available for calendars and events.", {}),
    ],
    "gmail": [
        (
            "send_email",
            "Send an email with Gmail.",
            {"to": "Recipients", "subject": "Subject", "body": "Body", "cc": "CC recipients"},
        ),
        (
            "search_emails",
            "Search emails in Gmail with Gmail's search syntax.",
            {"query": "Search query, e.g. from:ana has:attachment"},
        ),
        ("read_email", "Read the content of an email by its id.", {"message_id": "The email"}),
        (
            "draft_email",
            "Create a draft email without sending it.",
            {"to": "Recipients", "subject": "Subject", "body": "Body"},
        ),
        ("list_labels", "List the Gmail labels.", {}),
        (
            "modify_labels",
            "Add or remove labels on an email (archive, star, move to a folder).",
            {
                "message_id": "The email",
                "add_labels": "Labels to add",
                "remove_labels": "Labels to remove",
            },
        ),
        ("delete_email", "Delete an email permanently.", {"message_id": "The email"}),
        ("batch_delete", "Delete many emails at once.", {"message_ids": "The emails"}),
        (
            "create_filter",
            "Create a Gmail filter that labels, archives or forwards incoming mail.",
            {"criteria": "Which emails", "action": "What to do with them"},
        ),
        ("list_threads", "List email conversation threads in Gmail.", {"query": "Search query"}),
        (
            "get_attachment",
            "Download an attachment of an email.",
            {"message_id": "The email", "attachment_id": "The attachment"},
        ),
        ("mark_as_read", "Mark emails as read.", {"message_ids": "The emails"}),
    ],
    "stripe": [
        (
            "create_customer",
            "Create a customer in Stripe.",
            {"email": "Customer email", "name": "Customer name"},
        ),
        (
            "list_customers",
            "List Stripe customers, optionally by email.",
            {"email": "Filter by email", "limit": "Maximum results"},
        ),
        ("retrieve_customer", "Retrieve a Stripe customer by id.", {"customer": "Customer id"}),
        (
            "create_payment_intent",
            "Create a payment intent to charge a customer.",
            {
                "amount": "Amount in the smallest currency unit",
                "currency": "Three-letter currency code",
                "customer": "Customer id",
            },
        ),
        (
            "list_payment_intents",
            "List payment intents (charges) in Stripe.",
            {"customer": "Filter by customer", "limit": "Maximum results"},
        ),
        (
            "create_refund",
            "Refund a payment, fully or in part.",
            {"payment_intent": "The payment to refund", "amount": "Amount to refund"},
        ),
        (
            "create_invoice",
            "Create a draft invoice for a customer.",
            {"customer": "Customer id", "days_until_due": "Days until the invoice is due"},
        ),
        (
            "finalize_invoice",
            "Finalize a draft invoice so that it can be paid.",
            {"invoice": "Invoice id"},
        ),
        (
            "list_invoices",
            "List Stripe invoices.",
            {"customer": "Filter by customer", "status": "draft, open, paid or void"},
        ),
        (
            "create_product",
            "Create a product in the Stripe catalog.",
            {"name": "Product name", "description": "Product description"},
        ),
        ("list_products", "List the products in the Stripe catalog.", {"limit": "Maximum results"}),
        (
            "create_price",
            "Create a price (one-off or recurring) for a product.",
            {
                "product": "Product id",
                "unit_amount": "Amount",
                "currency": "Currency",
                "recurring": "Billing interval",
            },
        ),
        (
            "create_subscription",
            "Subscribe a customer to a recurring price.",
            {"customer": "Customer id", "price": "Price id"},
        ),
        (
            "cancel_subscription",
            "Cancel a customer's subscription.",
            {"subscription": "Subscription id"},
        ),
        ("retrieve_balance", "Retrieve the Stripe account balance.", {}),
        (
            "create_payment_link",
            "Create a shareable payment link for a price.",
            {"price": "Price id", "quantity": "Quantity"},
        ),
    ],
    "postgres": [
        (
            "query",
            "Run a read-only SQL query against the PostgreSQL database.",
            {"sql": "The SQL query"},
        ),
        ("list_schemas", "List the schemas of the PostgreSQL database.", {}),
        ("list_tables", "List the tables of a PostgreSQL schema.", {"schema": "Schema name"}),
        (
            "describe_table",
            "Describe a PostgreSQL table: columns, types, constraints.",
            {"table": "Table name"},
        ),
        (
            "explain_query",
            "Show the execution plan of a SQL query (EXPLAIN ANALYZE).",
            {"sql": "The SQL query"},
        ),
        ("list_indexes", "List the indexes of a PostgreSQL table.", {"table": "Table name"}),
        (
            "get_table_stats",
            "Get row counts, size on disk and bloat of PostgreSQL tables.",
            {"schema": "Schema name"},
        ),
        (
            "execute_statement",
            "Execute a SQL statement that changes data or schema (INSERT, UPDATE, DELETE, CREATE).",
            {"sql": "The SQL statement"},
        ),
    ],
    "notion": [
        ("search", "Search Notion pages and databases by title.", {"query": "Text to search for"}),
        ("retrieve_page", "Retrieve a Notion page and its properties.", {"page_id": "The page"}),
        (
            "create_page",
            "Create a new page in Notion, under a page or in a database.",
            {
                "parent_id": "Parent page or database",
                "title": "Page title",
                "content": "Page content",
            },
        ),
        (
            "update_page",
            "Update the properties of a Notion page.",
            {"page_id": "The page", "properties": "Properties to set"},
        ),
        (
            "append_block_children",
            "Append content blocks (paragraphs, lists, to-dos) to a Notion page.",
            {"block_id": "The page or block", "children": "Blocks to append"},
        ),
        (
            "retrieve_block_children",
            "Read the content blocks of a Notion page.",
            {"block_id": "The page or block"},
        ),
        (
            "query_database",
            "Query a Notion database with filters and sorts.",
            {"database_id": "The database", "filter": "Filter", "sorts": "Sort order"},
        ),
        (
            "create_database",
            "Create a Notion database with a schema of properties.",
            {
                "parent_id": "Parent page",
                "title": "Database title",
                "properties": "Property schema",
            },
        ),
        (
            "retrieve_comments",
            "Retrieve the comments on a Notion page or block.",
            {"block_id": "The page or block"},
        ),
        (
            "create_comment",
            "Add a comment to a Notion page.",
            {"page_id": "The page", "text": "Comment text"},
        ),
    ],
    "linear": [
        (
            "create_issue",
            "Create a Linear issue for a team.",
            {
                "team_id": "The team",
                "title": "Issue title",
                "description": "Markdown description",
                "priority": "0 to 4",
            },
        ),
        (
            "update_issue",
            "Update a Linear issue: status, assignee, priority, estimate.",
            {"issue_id": "The issue", "state_id": "New status"},
        ),
        (
            "search_issues",
            "Search Linear issues by text and filters.",
            {"query": "Search text", "status": "Filter by status"},
        ),
        ("get_issue", "Get a Linear issue with its comments.", {"issue_id": "The issue"}),
        ("list_teams", "List the teams in the Linear workspace.", {}),
        ("list_projects", "List Linear projects.", {"team_id": "Filter by team"}),
        (
            "create_project",
            "Create a Linear project.",
            {"name": "Project name", "team_ids": "Teams"},
        ),
        (
            "add_comment",
            "Comment on a Linear issue.",
            {"issue_id": "The issue", "body": "Comment text"},
        ),
        ("list_cycles", "List the cycles (sprints) of a Linear team.", {"team_id": "The team"}),
        (
            "get_user_issues",
            "List the Linear issues assigned to a user.",
            {"user_id": "The user (default: you)"},
        ),
    ],
    "kubernetes": [
        (
            "list_pods",
            "List pods in a Kubernetes namespace with their status.",
            {"namespace": "Namespace", "label_selector": "Label selector"},
        ),
        (
            "describe_pod",
            "Describe a Kubernetes pod: containers, events, conditions.",
            {"name": "Pod name", "namespace": "Namespace"},
        ),
        (
            "get_pod_logs",
            "Get the logs of a container in a Kubernetes pod.",
            {"name": "Pod name", "container": "Container name", "tail_lines": "Lines from the end"},
        ),
        (
            "delete_pod",
            "Delete a Kubernetes pod (its controller makes a new one).",
            {"name": "Pod name", "namespace": "Namespace"},
        ),
        (
            "list_deployments",
            "List Kubernetes deployments with their replicas.",
            {"namespace": "Namespace"},
        ),
        (
            "scale_deployment",
            "Scale a Kubernetes deployment to a number of replicas.",
            {"name": "Deployment name", "replicas": "Number of replicas"},
        ),
        (
            "rollout_restart",
            "Restart a Kubernetes deployment with a rolling update.",
            {"name": "Deployment name"},
        ),
        (
            "apply_manifest",
            "Apply a Kubernetes YAML manifest (like kubectl apply).",
            {"manifest": "YAML manifest"},
        ),
        ("list_namespaces", "List the namespaces of the Kubernetes cluster.", {}),
        ("create_namespace", "Create a Kubernetes namespace.", {"name": "Namespace name"}),
        ("list_services", "List Kubernetes services and their ports.", {"namespace": "Namespace"}),
        (
            "port_forward",
            "Forward a local port to a port of a Kubernetes pod or service.",
            {
                "resource": "Pod or service",
                "local_port": "Local port",
                "remote_port": "Remote port",
            },
        ),
        (
            "exec_in_pod",
            "Run a command inside a container of a Kubernetes pod.",
            {"name": "Pod name", "command": "Command to run"},
        ),
        (
            "get_events",
            "List recent events of the Kubernetes cluster (warnings, scheduling failures).",
            {"namespace": "Namespace"},
        ),
    ],
    "docker": [
        (
            "list_containers",
            "List Docker containers, running or all.",
            {"all": "Include stopped containers"},
        ),
        (
            "run_container",
            "Create and start a Docker container from an image.",
            {"image": "Image name", "ports": "Port mappings", "env": "Environment variables"},
        ),
        (
            "stop_container",
            "Stop a running Docker container.",
            {"container": "Container id or name"},
        ),
        (
            "remove_container",
            "Remove a Docker container.",
            {"container": "Container id or name", "force": "Remove even if running"},
        ),
        (
            "container_logs",
            "Get the logs of a Docker container.",
            {"container": "Container id or name", "tail": "Lines from the end"},
        ),
        ("list_images", "List the Docker images on this machine.", {}),
        ("pull_image", "Pull a Docker image from a registry.", {"image": "Image name and tag"}),
        (
            "build_image",
            "Build a Docker image from a Dockerfile.",
            {"path": "Build context", "tag": "Image tag"},
        ),
        ("list_volumes", "List Docker volumes.", {}),
        (
            "inspect_container",
            "Show the low-level configuration of a Docker container.",
            {"container": "Container id or name"},
        ),
    ],
    "aws": [
        ("s3_list_buckets", "List the S3 buckets of the AWS account.", {}),
        (
            "s3_list_objects",
            "List the objects in an S3 bucket under a prefix.",
            {"bucket": "Bucket name", "prefix": "Key prefix"},
        ),
        (
            "s3_get_object",
            "Download an object from an S3 bucket.",
            {"bucket": "Bucket name", "key": "Object key"},
        ),
        (
            "s3_put_object",
            "Upload an object to an S3 bucket.",
            {"bucket": "Bucket name", "key": "Object key", "body": "Content"},
        ),
        (
            "s3_delete_object",
            "Delete an object from an S3 bucket.",
            {"bucket": "Bucket name", "key": "Object key"},
        ),
        (
            "s3_create_bucket",
            "Create an S3 bucket.",
            {"bucket": "Bucket name", "region": "AWS region"},
        ),
        (
            "ec2_describe_instances",
            "Describe EC2 virtual machine instances and their state.",
            {"instance_ids": "Instances", "filters": "Filters"},
        ),
        ("ec2_start_instances", "Start stopped EC2 instances.", {"instance_ids": "Instances"}),
        ("ec2_stop_instances", "Stop running EC2 instances.", {"instance_ids": "Instances"}),
        (
            "lambda_invoke",
            "Invoke an AWS Lambda function with a payload.",
            {"function_name": "The function", "payload": "JSON payload"},
        ),
        ("lambda_list_functions", "List AWS Lambda functions.", {}),
        (
            "cloudwatch_get_metric_data",
            "Get CloudWatch metric values over time (CPU, latency, errors).",
            {"metric_name": "Metric", "namespace": "Namespace", "period": "Seconds per point"},
        ),
        (
            "cloudwatch_filter_log_events",
            "Search CloudWatch Logs log events with a filter pattern.",
            {"log_group_name": "Log group", "filter_pattern": "Filter pattern"},
        ),
        (
            "dynamodb_query",
            "Query items in a DynamoDB table by key.",
            {"table_name": "Table", "key_condition": "Key condition expression"},
        ),
    ],
    "sentry": [
        (
            "list_issues",
            "List unresolved Sentry error issues of a project.",
            {"project": "Project slug", "query": "Search query"},
        ),
        (
            "get_issue_details",
            "Get a Sentry issue with its latest event and stack trace.",
            {"issue_id": "The issue"},
        ),
        ("resolve_issue", "Mark a Sentry issue as resolved.", {"issue_id": "The issue"}),
        ("list_projects", "List the Sentry projects of the organization.", {}),
        (
            "get_event",
            "Get one Sentry error event with its stack trace and breadcrumbs.",
            {"event_id": "The event"},
        ),
        (
            "search_events",
            "Search Sentry error events by message, tag or release.",
            {"query": "Search query"},
        ),
        (
            "list_releases",
            "List Sentry releases and their new issues.",
            {"project": "Project slug"},
        ),
        (
            "create_alert_rule",
            "Create a Sentry alert rule that notifies on new errors.",
            {"project": "Project slug", "conditions": "When to alert", "actions": "Who to notify"},
        ),
    ],
    "google_maps": [
        (
            "geocode",
            "Convert an address into latitude and longitude coordinates.",
            {"address": "The address"},
        ),
        (
            "reverse_geocode",
            "Convert coordinates into a street address.",
            {"latitude": "Latitude", "longitude": "Longitude"},
        ),
        (
            "search_places",
            "Search for places (restaurants, shops, landmarks) near a location.",
            {"query": "What to look for", "location": "Near where", "radius": "Radius in meters"},
        ),
        (
            "place_details",
            "Get details of a place: opening hours, rating, phone, website.",
            {"place_id": "The place"},
        ),
        (
            "directions",
            "Get directions between two places by car, transit, bike or on foot.",
            {
                "origin": "Start",
                "destination": "End",
                "mode": "driving, transit, bicycling or walking",
            },
        ),
        (
            "distance_matrix",
            "Compute travel distance and time between several origins and destinations.",
            {"origins": "Origins", "destinations": "Destinations"},
        ),
        ("elevation", "Get the elevation of locations.", {"locations": "Coordinates"}),
    ],
    "weather": [
        (
            "get_forecast",
            "Get the weather forecast for the next days at a location.",
            {"latitude": "Latitude", "longitude": "Longitude", "days": "Number of days"},
        ),
        (
            "get_current_conditions",
            "Get the current weather: temperature, wind, humidity, precipitation.",
            {"location": "City or coordinates"},
        ),
        (
            "get_alerts",
            "Get active severe weather alerts for a US state.",
            {"state": "Two-letter state code"},
        ),
    ],
    "memory": [
        (
            "create_entities",
            "Create entities in the knowledge graph memory.",
            {"entities": "Entities with name, type and observations"},
        ),
        (
            "create_relations",
            "Create relations between entities of the knowledge graph.",
            {"relations": "Relations with from, to and type"},
        ),
        (
            "add_observations",
            "Add observations (facts) to existing entities of the knowledge graph.",
            {"observations": "Facts per entity"},
        ),
        (
            "delete_entities",
            "Delete entities and their relations from the knowledge graph.",
            {"entity_names": "Entities to delete"},
        ),
        (
            "delete_observations",
            "Delete observations from entities of the knowledge graph.",
            {"deletions": "Facts to remove"},
        ),
        (
            "delete_relations",
            "Delete relations from the knowledge graph.",
            {"relations": "Relations to delete"},
        ),
        ("read_graph", "Read the whole knowledge graph memory.", {}),
        (
            "search_nodes",
            "Search the knowledge graph memory for entities matching a query.",
            {"query": "Search text"},
        ),
        (
            "open_nodes",
            "Open specific entities of the knowledge graph by name.",
            {"names": "Entity names"},
        ),
    ],
    "browser": [
        ("navigate", "Navigate the browser to a URL.", {"url": "The URL"}),
        (
            "screenshot",
            "Take a screenshot of the current page or of an element.",
            {"selector": "CSS selector of an element", "full_page": "Capture the whole page"},
        ),
        ("click", "Click an element on the page.", {"selector": "CSS selector"}),
        (
            "fill",
            "Fill out an input field of a form.",
            {"selector": "CSS selector", "value": "Text to type"},
        ),
        (
            "select",
            "Choose an option in a select element.",
            {"selector": "CSS selector", "value": "Option value"},
        ),
        ("hover", "Hover the mouse over an element.", {"selector": "CSS selector"}),
        (
            "evaluate",
            "Execute JavaScript in the page and return the result.",
            {"script": "JavaScript code"},
        ),
        ("get_console_logs", "Get the browser console logs of the page.", {}),
    ],
    "time": [
        (
            "get_current_time",
            "Get the current time in a timezone.",
            {"timezone": "IANA timezone, e.g. Europe/Paris"},
        ),
        (
            "convert_time",
            "Convert a time between two timezones.",
            {"time": "Time (HH:MM)", "source_timezone": "From", "target_timezone": "To"},
        ),
    ],
    "sqlite": [
        (
            "read_query",
            "Execute a SELECT query on the SQLite database.",
            {"query": "SELECT statement"},
        ),
        (
            "write_query",
            "Execute an INSERT, UPDATE or DELETE query on the SQLite database.",
            {"query": "SQL statement"},
        ),
        (
            "create_table",
            "Create a new table in the SQLite database.",
            {"query": "CREATE TABLE statement"},
        ),
        ("list_tables", "List the tables of the SQLite database.", {}),
        ("describe_table", "Get the schema of a SQLite table.", {"table_name": "Table"}),
        ("append_insight", "Add a business insight to the memo.", {"insight": "The insight"}),
    ],
    "hubspot": [
        (
            "create_contact",
            "Create a contact in the HubSpot CRM.",
            {
                "email": "Email",
                "firstname": "First name",
                "lastname": "Last name",
                "company": "Company",
            },
        ),
        (
            "get_contact",
            "Get a HubSpot contact by id or email.",
            {"contact_id": "Contact id or email"},
        ),
        (
            "search_contacts",
            "Search HubSpot CRM contacts by name, email or property.",
            {"query": "Search text", "filters": "Property filters"},
        ),
        (
            "update_contact",
            "Update properties of a HubSpot contact.",
            {"contact_id": "The contact", "properties": "Properties to set"},
        ),
        (
            "create_company",
            "Create a company record in HubSpot.",
            {"name": "Company name", "domain": "Website domain"},
        ),
        (
            "create_deal",
            "Create a sales deal in the HubSpot pipeline.",
            {
                "dealname": "Deal name",
                "amount": "Amount",
                "pipeline": "Pipeline",
                "dealstage": "Stage",
            },
        ),
        (
            "update_deal_stage",
            "Move a HubSpot deal to another pipeline stage.",
            {"deal_id": "The deal", "dealstage": "New stage"},
        ),
        (
            "list_deals",
            "List deals in the HubSpot sales pipeline.",
            {"pipeline": "Filter by pipeline"},
        ),
        (
            "log_call",
            "Log a phone call with a contact in HubSpot.",
            {"contact_id": "The contact", "notes": "Call notes", "duration": "Duration"},
        ),
        (
            "create_task",
            "Create a follow-up task for a sales rep in HubSpot.",
            {"subject": "Task subject", "due_date": "Due date", "owner_id": "Assignee"},
        ),
    ],
    "zendesk": [
        (
            "create_ticket",
            "Create a Zendesk support ticket.",
            {"subject": "Subject", "description": "First comment", "requester_email": "Requester"},
        ),
        (
            "get_ticket",
            "Get a Zendesk support ticket with its comments.",
            {"ticket_id": "The ticket"},
        ),
        (
            "update_ticket",
            "Update a Zendesk ticket: status, priority, assignee.",
            {
                "ticket_id": "The ticket",
                "status": "new, open, pending, solved",
                "priority": "Priority",
            },
        ),
        ("search_tickets", "Search Zendesk tickets.", {"query": "Search query"}),
        (
            "add_ticket_comment",
            "Reply to a customer on a Zendesk ticket, or add an internal note.",
            {"ticket_id": "The ticket", "body": "Comment", "public": "Visible to the customer"},
        ),
        ("list_macros", "List the Zendesk macros (canned responses).", {}),
        (
            "apply_macro",
            "Apply a Zendesk macro to a ticket.",
            {"ticket_id": "The ticket", "macro_id": "The macro"},
        ),
        (
            "get_user_tickets",
            "List the tickets a Zendesk user has requested.",
            {"user_id": "The user"},
        ),
    ],
    "google_drive": [
        (
            "search_files",
            "Search files in Google Drive by name or content.",
            {"query": "Search text"},
        ),
        (
            "read_file",
            "Read the content of a Google Drive file (Docs, Sheets exported as text).",
            {"file_id": "The file"},
        ),
        (
            "create_file",
            "Create a file in Google Drive.",
            {"name": "File name", "content": "Content", "mime_type": "Type", "folder_id": "Folder"},
        ),
        (
            "share_file",
            "Share a Google Drive file with people or make it public.",
            {
                "file_id": "The file",
                "email": "Who to share with",
                "role": "reader, commenter or writer",
            },
        ),
        ("list_folder", "List the files in a Google Drive folder.", {"folder_id": "The folder"}),
        (
            "move_file",
            "Move a Google Drive file to another folder.",
            {"file_id": "The file", "folder_id": "Destination folder"},
        ),
        ("delete_file", "Move a Google Drive file to the trash.", {"file_id": "The file"}),
        (
            "export_document",
            "Export a Google Doc or Sheet as PDF, DOCX or CSV.",
            {"file_id": "The file", "mime_type": "Export format"},
        ),
    ],
    "todoist": [
        (
            "create_task",
            "Add a task to Todoist with a due date and priority.",
            {
                "content": "Task text",
                "due_string": "Due date in natural language",
                "priority": "1 to 4",
            },
        ),
        (
            "list_tasks",
            "List active Todoist tasks, optionally for a project or filter.",
            {"project_id": "Project", "filter": "Filter such as 'today'"},
        ),
        ("complete_task", "Mark a Todoist task as done.", {"task_id": "The task"}),
        (
            "update_task",
            "Change a Todoist task's text, due date or priority.",
            {"task_id": "The task", "due_string": "New due date"},
        ),
        ("delete_task", "Delete a Todoist task.", {"task_id": "The task"}),
        ("list_projects", "List Todoist projects.", {}),
        ("add_label", "Add a label to a Todoist task.", {"task_id": "The task", "label": "Label"}),
    ],
    "twilio": [
        (
            "send_sms",
            "Send an SMS text message to a phone number.",
            {"to": "Phone number", "body": "Message text"},
        ),
        (
            "make_call",
            "Place a phone call that plays a message.",
            {"to": "Phone number", "message": "What to say"},
        ),
        ("list_messages", "List SMS messages sent and received.", {"to": "Filter by recipient"}),
        (
            "get_call_logs",
            "List recent phone calls with their duration and status.",
            {"limit": "Maximum results"},
        ),
        (
            "lookup_phone_number",
            "Look up a phone number's carrier and type.",
            {"phone_number": "Phone number"},
        ),
    ],
    "datadog": [
        (
            "query_metrics",
            "Query Datadog metrics time series.",
            {"query": "Metric query", "from_ts": "Start", "to_ts": "End"},
        ),
        (
            "list_monitors",
            "List Datadog monitors and whether they alert.",
            {"tags": "Filter by tags"},
        ),
        (
            "mute_monitor",
            "Mute a Datadog monitor for a while.",
            {"monitor_id": "The monitor", "end": "Until when"},
        ),
        ("search_logs", "Search Datadog logs.", {"query": "Log query", "from_ts": "Start"}),
        ("list_dashboards", "List Datadog dashboards.", {}),
        (
            "create_event",
            "Post an event to the Datadog event stream (a deploy, an incident note).",
            {"title": "Title", "text": "Text"},
        ),
    ],
    "pagerduty": [
        (
            "list_incidents",
            "List PagerDuty incidents by status.",
            {"statuses": "triggered, acknowledged, resolved"},
        ),
        (
            "acknowledge_incident",
            "Acknowledge a PagerDuty incident.",
            {"incident_id": "The incident"},
        ),
        ("resolve_incident", "Resolve a PagerDuty incident.", {"incident_id": "The incident"}),
        (
            "create_incident",
            "Open a PagerDuty incident to page the on-call responder.",
            {"title": "Title", "service_id": "Service", "urgency": "high or low"},
        ),
        (
            "list_oncalls",
            "List who is on call now for each PagerDuty escalation policy.",
            {"schedule_id": "Filter by schedule"},
        ),
        ("list_services", "List PagerDuty services.", {}),
    ],
}


def _schema(params: dict[str, str]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {p: {"type": "string", "description": d} for p, d in params.items()},
    }


def corpus() -> ToolRegistry:
    """A registry of every tool of the test set (built-ins, captured MCP servers, services)."""
    import kode.builtin  # noqa: F401 - registers the built-ins in the global registry
    from kode import registry as global_registry

    reg = ToolRegistry("search-corpus")
    for entry in global_registry.entries():
        if entry.meta.source.value == "core" and entry.tool is not None:
            reg.register(entry.tool, source="core")
    for server in ("everything", "filesystem"):
        for spec in json.loads((DATA / f"mcp_{server}.json").read_text()):
            name = f"mcp__{server}__{spec['name']}"  # as kode.mcp names them
            made = Tool.from_schema(
                name, description=spec["description"], input_schema=spec["inputSchema"]
            )
            reg.register(made, source="mcp", server=server, remote_name=spec["name"])
    for server, tools in SERVICES.items():
        for tool, description, params in tools:
            made = Tool.from_schema(
                f"mcp__{server}__{tool}", description=description, input_schema=_schema(params)
            )
            reg.register(made, source="mcp", server=server, remote_name=tool)
    return reg


def _gh(tool: str) -> str:
    return f"mcp__github__{tool}"


# (query as a user or a model would ask it, the tools that answer it)
QUERIES: list[tuple[str, list[str]]] = [
    # kode's built-ins
    ("read the contents of a file", ["fs_read", "mcp__filesystem__read_text_file"]),
    ("replace a line of text in a source file", ["fs_edit", "mcp__filesystem__edit_file"]),
    ("run a shell command", ["bash_run"]),
    ("stop the background process I started", ["bash_kill"]),
    ("what did my background job print so far", ["bash_logs"]),
    ("find files whose names end in .py", ["fs_glob"]),
    ("search file contents for a regular expression", ["fs_grep"]),
    ("list the directory", ["fs_ls", "mcp__filesystem__list_directory"]),
    ("write a new file to disk", ["fs_write", "mcp__filesystem__write_file"]),
    ("make several edits to one file at once", ["fs_multi_edit"]),
    ("search the web for the latest python release", ["web_search"]),
    ("download this web page and give me its text", ["web_fetch"]),
    ("keep track of my todo list", ["todo_write"]),
    ("delegate this research to a sub-agent", ["task_run"]),
    # the MCP servers captured
    ("echo back my input", ["mcp__everything__echo"]),
    ("add two numbers together", ["mcp__everything__get-sum"]),
    ("show me the environment variables of the server", ["mcp__everything__get-env"]),
    ("compress a file with gzip", ["mcp__everything__gzip-file-as-resource"]),
    ("get a tiny test image", ["mcp__everything__get-tiny-image"]),
    ("turn logging on", ["mcp__everything__toggle-simulated-logging"]),
    (
        "run a long operation that reports progress",
        ["mcp__everything__trigger-long-running-operation"],
    ),
    ("create a folder", ["mcp__filesystem__create_directory"]),
    ("rename a file", ["mcp__filesystem__move_file"]),
    ("show file sizes in a folder", ["mcp__filesystem__list_directory_with_sizes"]),
    ("recursive tree of the project's directories", ["mcp__filesystem__directory_tree"]),
    ("when was this file last modified", ["mcp__filesystem__get_file_info"]),
    ("which directories am I allowed to access", ["mcp__filesystem__list_allowed_directories"]),
    ("read several files at the same time", ["mcp__filesystem__read_multiple_files"]),
    ("open an image file and return it as base64", ["mcp__filesystem__read_media_file"]),
    # GitHub
    ("open a new issue on github about the crash", [_gh("create_issue")]),
    ("file a bug report in the kode repository", [_gh("create_issue")]),
    ("close github issue 42", [_gh("update_issue")]),
    ("comment on the pull request", [_gh("add_issue_comment")]),
    ("open a pull request from my feature branch", [_gh("create_pull_request")]),
    ("merge PR 17 with squash", [_gh("merge_pull_request")]),
    ("approve the pull request", [_gh("create_pull_request_review")]),
    ("which files did the PR change", [_gh("get_pull_request_files")]),
    ("create a new git branch on github", [_gh("create_branch")]),
    ("show the recent commits on main", [_gh("list_commits")]),
    ("fork the repository to my org", [_gh("fork_repository")]),
    ("find repositories about vector databases", [_gh("search_repositories")]),
    ("search code on github for uses of define_tool", [_gh("search_code")]),
    ("publish a release with notes for v1.2", [_gh("create_release")]),
    ("why did the CI workflow fail, get the logs", [_gh("get_workflow_run_logs")]),
    ("rerun the failed github actions job", [_gh("rerun_workflow")]),
    ("label the issue as a bug", [_gh("add_labels_to_issue")]),
    ("read README.md from the github repo", [_gh("get_file_contents")]),
    ("commit and push several files to github", [_gh("push_files")]),
    # Slack
    ("post a message in the #general slack channel", ["mcp__slack__post_message"]),
    ("reply in the slack thread", ["mcp__slack__reply_to_thread"]),
    ("react with a thumbs up emoji", ["mcp__slack__add_reaction"]),
    ("what was said recently in the team channel", ["mcp__slack__get_channel_history"]),
    ("invite Ana to the slack channel", ["mcp__slack__invite_to_channel"]),
    ("send this slack message tomorrow at 9am", ["mcp__slack__schedule_message"]),
    ("find slack messages mentioning the outage", ["mcp__slack__search_messages"]),
    ("edit the slack message I posted", ["mcp__slack__update_message"]),
    # Jira and Linear
    ("create a jira ticket for the login bug", ["mcp__jira__create_issue"]),
    ("move PROJ-12 to done", ["mcp__jira__transition_issue"]),
    ("find jira issues with JQL", ["mcp__jira__search_issues"]),
    ("log two hours of work on the jira ticket", ["mcp__jira__log_work"]),
    ("start a new sprint on the board", ["mcp__jira__create_sprint"]),
    ("assign the jira issue to Bob", ["mcp__jira__assign_issue"]),
    ("create a linear issue for the design team", ["mcp__linear__create_issue"]),
    ("what linear issues are assigned to me", ["mcp__linear__get_user_issues"]),
    # calendar, mail, time
    (
        "schedule a meeting with Ana next Tuesday at 3pm",
        ["mcp__google_calendar__create_event", "mcp__google_calendar__quick_add_event"],
    ),
    ("what is on my calendar this week", ["mcp__google_calendar__list_events"]),
    (
        "find a free slot for a 30 minute call with the team",
        ["mcp__google_calendar__find_free_time"],
    ),
    ("decline the meeting invitation", ["mcp__google_calendar__respond_to_event"]),
    ("cancel my dentist appointment in the calendar", ["mcp__google_calendar__delete_event"]),
    ("send an email to the client", ["mcp__gmail__send_email"]),
    ("find emails from Ana with attachments", ["mcp__gmail__search_emails"]),
    ("write a draft reply but do not send it", ["mcp__gmail__draft_email"]),
    ("archive these emails", ["mcp__gmail__modify_labels"]),
    ("automatically label newsletters as they arrive", ["mcp__gmail__create_filter"]),
    ("what time is it in Tokyo", ["mcp__time__get_current_time"]),
    ("convert 3pm Paris time to New York time", ["mcp__time__convert_time"]),
    # payments, CRM, support
    ("refund the customer's last payment", ["mcp__stripe__create_refund"]),
    ("charge the customer 20 dollars", ["mcp__stripe__create_payment_intent"]),
    (
        "send an invoice to the customer",
        ["mcp__stripe__create_invoice", "mcp__stripe__finalize_invoice"],
    ),
    ("cancel the customer's subscription", ["mcp__stripe__cancel_subscription"]),
    ("how much money is in our stripe balance", ["mcp__stripe__retrieve_balance"]),
    ("make a payment link I can share", ["mcp__stripe__create_payment_link"]),
    ("add a new lead to the CRM", ["mcp__hubspot__create_contact"]),
    ("move the deal to closed won", ["mcp__hubspot__update_deal_stage"]),
    ("log my call with the customer in hubspot", ["mcp__hubspot__log_call"]),
    ("open a support ticket for the customer", ["mcp__zendesk__create_ticket"]),
    ("reply to the customer on the support ticket", ["mcp__zendesk__add_ticket_comment"]),
    ("use a canned response on this ticket", ["mcp__zendesk__apply_macro"]),
    # data
    ("run a SQL query on the postgres database", ["mcp__postgres__query"]),
    (
        "what columns does the users table have",
        ["mcp__postgres__describe_table", "mcp__sqlite__describe_table"],
    ),
    ("why is this query slow, show the plan", ["mcp__postgres__explain_query"]),
    ("insert rows into the sqlite database", ["mcp__sqlite__write_query"]),
    ("query the dynamodb table by key", ["mcp__aws__dynamodb_query"]),
    ("filter the notion database for tasks due today", ["mcp__notion__query_database"]),
    ("write meeting notes to a new notion page", ["mcp__notion__create_page"]),
    (
        "remember that Ana prefers mornings",
        ["mcp__memory__add_observations", "mcp__memory__create_entities"],
    ),
    (
        "what do you remember about the project",
        ["mcp__memory__search_nodes", "mcp__memory__read_graph"],
    ),
    # infrastructure
    ("show the logs of the crashing pod", ["mcp__kubernetes__get_pod_logs"]),
    ("scale the api deployment to 5 replicas", ["mcp__kubernetes__scale_deployment"]),
    ("restart the deployment", ["mcp__kubernetes__rollout_restart"]),
    ("kubectl apply this yaml", ["mcp__kubernetes__apply_manifest"]),
    ("run a command inside the pod", ["mcp__kubernetes__exec_in_pod"]),
    ("which docker containers are running", ["mcp__docker__list_containers"]),
    ("start a postgres container", ["mcp__docker__run_container"]),
    ("build a docker image from the Dockerfile", ["mcp__docker__build_image"]),
    ("upload the report to the s3 bucket", ["mcp__aws__s3_put_object"]),
    ("list the files in the s3 bucket", ["mcp__aws__s3_list_objects"]),
    ("stop the ec2 instance", ["mcp__aws__ec2_stop_instances"]),
    ("invoke the lambda function", ["mcp__aws__lambda_invoke"]),
    ("search cloudwatch logs for timeouts", ["mcp__aws__cloudwatch_filter_log_events"]),
    ("what errors is sentry reporting", ["mcp__sentry__list_issues"]),
    (
        "show the stack trace of the sentry error",
        ["mcp__sentry__get_issue_details", "mcp__sentry__get_event"],
    ),
    ("mark the sentry issue resolved", ["mcp__sentry__resolve_issue"]),
    ("who is on call right now", ["mcp__pagerduty__list_oncalls"]),
    ("page the on-call engineer", ["mcp__pagerduty__create_incident"]),
    ("acknowledge the incident", ["mcp__pagerduty__acknowledge_incident"]),
    ("mute the noisy monitor for an hour", ["mcp__datadog__mute_monitor"]),
    (
        "graph the CPU metrics for the last day",
        ["mcp__datadog__query_metrics", "mcp__aws__cloudwatch_get_metric_data"],
    ),
    # the world
    ("what's the weather going to be tomorrow in Lyon", ["mcp__weather__get_forecast"]),
    ("is it raining right now in Berlin", ["mcp__weather__get_current_conditions"]),
    ("how do I drive from Paris to Lyon", ["mcp__google_maps__directions"]),
    ("find coffee shops near me", ["mcp__google_maps__search_places"]),
    ("get the coordinates of this address", ["mcp__google_maps__geocode"]),
    ("take a screenshot of the web page", ["mcp__browser__screenshot"]),
    ("click the login button", ["mcp__browser__click"]),
    ("type my email into the form field", ["mcp__browser__fill"]),
    ("text my phone number that the build is done", ["mcp__twilio__send_sms"]),
    ("share the google doc with Bob", ["mcp__google_drive__share_file"]),
    ("export the spreadsheet as csv", ["mcp__google_drive__export_document"]),
    ("add buy milk to my todo list for tomorrow", ["mcp__todoist__create_task", "todo_write"]),
    ("mark the todoist task as done", ["mcp__todoist__complete_task"]),
]
