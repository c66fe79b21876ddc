"""The conversation an input line gives as `messages`: the shape the Messages API takes, checked line
by line (`check_messages`, naming the first bad message) or a column of a block's conversations at a
time (`message_blocks`, which vouches for a block or leaves it to the line by line check)."""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import is_
from typing import Any

from judgecore.job.errors import InputError

_MESSAGE_KEYS = frozenset({"role", "content"})
_ROLES = frozenset({"user", "assistant"})


def check_messages(line: int, item_id: str, messages: Any) -> None:
    """Roles `user`/`assistant`; content a non-empty string or a non-empty list of blocks, each an
    object with a string `type` (a `text` block with a string `text`; block types the API may add
    later pass through untouched); no other key on a message."""
    if type(messages) is not list or not messages:
        raise InputError(line, f"item {item_id!r}: 'messages' must be a non-empty list")
    for n, msg in enumerate(messages):
        # the usual message, `{"role": ..., "content": "text"}`, in one test
        role = msg.get("role") if type(msg) is dict else None
        if type(role) is str and role in _ROLES and len(msg) == 2:
            content = msg.get("content")
            if type(content) is str and content:
                continue
        if type(msg) is not dict:
            raise bad_message(line, item_id, n, " must be an object")
        if not msg.keys() <= _MESSAGE_KEYS:
            extra = ", ".join(sorted(set(msg) - _MESSAGE_KEYS))
            raise bad_message(
                line, item_id, n, f" has unknown key(s) {extra}; a message has only 'role' and 'content'"
            )
        if type(role) is not str or role not in _ROLES:
            raise bad_message(line, item_id, n, ".role must be 'user' or 'assistant'")
        content = msg.get("content")
        if type(content) is str and content:
            continue
        if type(content) is not list or not content:
            raise bad_message(line, item_id, n, ".content must be a non-empty string or list of blocks")
        for k, block in enumerate(content):
            if type(block) is not dict or type(block.get("type")) is not str or not block["type"]:
                raise bad_message(line, item_id, n, f".content[{k}] must be an object with a string 'type'")
            if block["type"] == "text" and type(block.get("text")) is not str:
                raise bad_message(line, item_id, n, f".content[{k}] is a text block without a string 'text'")


def bad_message(line: int, item_id: str, n: int, what: str) -> InputError:
    return InputError(line, f"item {item_id!r}: messages[{n}]{what}")


def message_blocks(convs: list[Any]) -> bool | None:
    """Whether any of the conversations `convs` (a block's, each a non-empty list) has content
    blocks, when every one is a conversation `check_messages` accepts, checked a column of messages
    (and of content blocks) at a time; None when one is not, or not plainly so. A message's content
    of a string cannot nest: only content blocks need a look at the depth."""
    flat = list(chain.from_iterable(convs))
    try:
        roles = list(map(dict.get, flat, repeat("role")))  # a message that is no object: TypeError
        if not set(roles) <= _ROLES or set(map(len, flat)) != {2}:  # an unhashable role: TypeError
            return None
    except TypeError:
        return None
    # two keys, a role among them: the other is `content`, checked now
    contents = list(map(dict.get, flat, repeat("content")))
    if "" in contents:
        return None
    try:
        "".join(contents)  # every content a string (the usual): no blocks
        return False
    except TypeError:
        pass
    content_types = set(map(type, contents))
    if not content_types <= {str, list} or [] in contents:
        return None
    blocks = list(chain.from_iterable(compress(contents, map(is_, map(type, contents), repeat(list)))))
    if set(map(type, blocks)) != {dict}:
        return None
    block_types = list(map(dict.get, blocks, repeat("type")))
    if set(map(type, block_types)) != {str} or "" in block_types:
        return None
    texts = compress(map(dict.get, blocks, repeat("text")), map("text".__eq__, block_types))
    return True if set(map(type, texts)) <= {str} else None
