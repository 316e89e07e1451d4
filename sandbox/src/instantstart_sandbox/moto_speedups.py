"""Shortcuts that make moto cheaper without changing what it answers.

Profiled on a cluster create (``make test``'s integration suite), moto spent much of its CPU re-deriving
things that never change between calls. Step Functions:

* every execution re-parses its state machine's ASL with the pure-Python ANTLR parser (over a second
  of CPU for the create workflow) and builds its evaluation components from the tree (another 0.26 s);
  the tree and the components built from it are now kept (keyed by the definition text), and each
  execution gets a deep copy of the components (0.06 s), so no execution shares mutable state with another.
  The components of a definition that parsed are also kept on disk (:func:`_program_cache_dir`, pickled, keyed by
  the definition's SHA-256 and moto's and Python's versions), so each further sandbox process (every pytest-xdist
  worker, every ``serve``/``demo``) loads them in milliseconds instead of parsing again (about 2 CPU-seconds for the
  three workflows); on such a load the parse tree is None: only moto's static analysers read it, and its Step
  Functions backend runs none;
* every JSONPath (``$.cluster.tag``) is compiled by a fresh ``jsonpath_ng`` parser (a PLY grammar
  built per call); compiled paths are now kept (keyed by the path text; ``find`` does not mutate them);
* every Lambda task builds a new boto3 Lambda client (service model load, endpoint resolver); the
  client, whose settings are constants, is now built once per Region and endpoint.

DynamoDB: every item in a response went through moto's generic, model-driven serializer, which looks up
ten members (and their snake_case aliases) for every attribute value; :func:`_dynamodb_attribute_values_fast`
writes an ``AttributeValue`` of the usual kinds (S, N, BOOL, NULL, SS, NS, M, L) directly, with the same
result, and leaves anything else (binary values, unknown keys) to the generic path.

Per request, moto also listed its response class's methods with ``inspect.getmembers`` (to check the action
is one of them); the names are now kept per class (recomputed when a class in its MRO gains or loses an
attribute name, as a test's monkeypatch does). DynamoDB parsed every ``UpdateExpression`` from its text on each
call; the parse tree of an expression text is now kept (moto deep-copies it before validating and executing,
so the kept tree is never changed; an invalid expression is not kept and fails on every call).

Each of the ten processors that validate and execute an ``UpdateExpression`` rebuilt its processing map (a dict of
bound methods) and ran ABC ``isinstance`` checks at every node it visited, to ask whether that node is one it
processes; those answers, and ``find_clauses``' "descend into this child", are now kept per node class
(:func:`_update_expression_traversals_list_their_node_types_once`).

DynamoDB's ``UpdateItem`` deep-copied the stored item before each update, to read its attributes as they were (for
``ReturnValues`` ``ALL_OLD``/``UPDATED_*``); that read, ``Item.to_json()``, is already a copy, so the item is no longer
copied first (:func:`_updates_snapshot_the_old_item_once`).

DynamoDB's ``TransactWriteItems`` deep-copied every table it writes, all items, before each transaction (its
rollback on a cancellation): the cost grew with the table, so long runs (the fault matrix: a few thousand items)
spent a sixth of their CPU there. The backup now shares the table's untouched items and deep-copies only the items
the transaction names (:func:`_transactions_back_up_only_their_items`); a cancelled transaction leaves every item as
it was, as before.

EC2 read one resource's tags (for a ``tag:`` filter or a response) by scanning every tag of every resource with
regular expressions, so each Describe call grew with the account; :func:`_ec2_tags_are_read_by_resource_id` reads
the resource's own tags, with the same entries in the same order.

moto's server listed its own package directory (a ``listdir`` and an ``isdir`` per entry, about 150) on every
request to find the request's backend; the list, fixed for an installed moto, is now read once
(:func:`_moto_modules_are_listed_once`).

Per process: moto's IAM built the ~1,600 AWS managed policies for every partition (aws, aws-cn, aws-us-gov, ...), as
its access-key lookup visits each; the sandbox's account lives in the ``aws`` partition only (Region
us-west-2, ARNs ``arn:aws:...``), so only that partition's IAM loads them (attaching
``arn:aws:iam::aws:policy/...`` works as before).

Applied once by :class:`instantstart_sandbox.runner.Sandbox` (:func:`install` is idempotent). Failed
parses are not cached: an invalid definition raises the same error on every call.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import os
import pickle
import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

_TREE_CACHE_SIZE = 64
"""Distinct ASL definitions whose parse trees are kept (the template has three state machines)."""


def install() -> None:
    """Install every shortcut (idempotent)."""
    _asl_parse_trees_are_kept()
    _json_paths_are_compiled_once()
    _lambda_clients_are_reused()
    _dynamodb_attribute_values_fast()
    _action_method_names_are_kept()
    _update_expressions_are_parsed_once()
    _update_expression_traversals_list_their_node_types_once()
    _aws_managed_policies_only_in_the_aws_partition()
    _transactions_back_up_only_their_items()
    _updates_snapshot_the_old_item_once()
    _ec2_tags_are_read_by_resource_id()
    _moto_modules_are_listed_once()


def _asl_parse_trees_are_kept() -> None:
    from moto.stepfunctions.parser.asl.parse import asl_parser as parser_module
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    asl_parser: Any = parser_module  # the ANTLR names moto's parser uses (antlr4 is moto's dependency, not ours)
    parser_class = asl_parser.AmazonStateLanguageParser
    if getattr(parser_class, "_instantstart_patched", False):
        return

    @functools.lru_cache(maxsize=_TREE_CACHE_SIZE)
    def tree_of(definition: str) -> Any:
        listener = asl_parser.SyntaxErrorListener()
        stream = asl_parser.CommonTokenStream(asl_parser.ASLLexer(asl_parser.InputStream(definition)))
        parser = asl_parser.ASLParser(stream)
        parser.removeErrorListeners()
        parser.addErrorListener(listener)
        tree = parser.state_machine()
        if listener.errors:  # raising keeps the failure out of the cache
            raise asl_parser.ASLParserException(errors=listener.errors)
        return tree

    @functools.lru_cache(maxsize=_TREE_CACHE_SIZE)
    def program_of(definition: str) -> tuple[Any, Any]:
        kept = _kept_program(definition)
        if kept is not None:
            return kept, None
        tree = tree_of(definition)
        program = Preprocessor().visit(tree)  # never evaluated: the pristine components each call copies
        _keep_program(definition, program)
        return program, tree

    def parse(definition: str) -> tuple[Any, Any]:
        program, tree = program_of(definition)
        return copy.deepcopy(program), tree  # fresh evaluation components per call

    parser_class.parse = staticmethod(parse)
    parser_class._instantstart_patched = True


def _program_cache_dir() -> Path:
    """Where parsed ASL programs are kept across processes: ``$INSTANTSTART_SANDBOX_CACHE`` or
    ``$XDG_CACHE_HOME/instantstart-sandbox`` (default ``~/.cache``), one directory per moto and Python version."""
    import sys
    from importlib.metadata import version

    root = os.environ.get("INSTANTSTART_SANDBOX_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "instantstart-sandbox"
    )
    return Path(root) / f"asl-moto{version('moto')}-py{sys.version_info.major}.{sys.version_info.minor}"


def _program_path(definition: str) -> Path:
    return _program_cache_dir() / f"{hashlib.sha256(definition.encode()).hexdigest()}.pickle"


def _kept_program(definition: str) -> Any:
    """The evaluation components of ``definition`` kept by an earlier process, or None (not kept, unreadable)."""
    try:
        with _program_path(definition).open("rb") as kept:
            # the user's own cache directory, written only by _keep_program (a definition that parsed)
            return pickle.load(kept)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def _keep_program(definition: str, program: Any) -> None:
    """Keep the components of a definition that parsed for later processes (best effort: a cache that cannot be
    written costs the next process a parse, nothing else). Written to a temporary file, then renamed: a reader in
    another process sees the whole file or none."""
    path = _program_path(definition)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            pickle.dump(program, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except (OSError, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(temporary)


def _json_paths_are_compiled_once() -> None:
    from moto.stepfunctions.parser.asl.utils import json_path as json_path_module

    json_path: Any = json_path_module
    if getattr(json_path.parse, "_instantstart_patched", False):
        return
    compiled = functools.lru_cache(maxsize=1024)(json_path.parse)
    compiled._instantstart_patched = True  # type: ignore[attr-defined]
    json_path.parse = compiled


def _lambda_clients_are_reused() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils as eval_utils
    from moto.stepfunctions.parser.asl.utils import boto_client

    lambda_eval_utils: Any = eval_utils

    if getattr(lambda_eval_utils.boto_client_for, "_instantstart_patched", False):
        return
    build = boto_client.boto_client_for
    clients: dict[tuple[str, str, bool, str], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        # moto's builder ignores ``state_credentials`` (constant keys and config): the key leaves it out too
        from moto.core.models import botocore_stubber
        from moto.settings import moto_server_port

        key = (region, service, bool(botocore_stubber.enabled), str(moto_server_port()))
        with lock:
            if key not in clients:
                clients[key] = build(region, service, state_credentials)
            return clients[key]

    boto_client_for._instantstart_patched = True  # type: ignore[attr-defined]
    lambda_eval_utils.boto_client_for = boto_client_for


_STRING_MEMBERS = frozenset({"S", "N"})
_STRING_SET_MEMBERS = frozenset({"SS", "NS"})
_PASS_THROUGH_MEMBERS = frozenset({"BOOL", "NULL"})
_FAST_MEMBERS = _STRING_MEMBERS | _STRING_SET_MEMBERS | _PASS_THROUGH_MEMBERS | {"M", "L"}
_MEMBER_ORDER = ("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL")
"""The members of DynamoDB's ``AttributeValue`` shape, in the model's order (the serializer's output order)."""


def _as_string(value: Any) -> Any:
    """moto's JSON string serialization: ``str(value)``, except None, {} and [] which stay as they are."""
    return str(value) if value not in (None, {}, []) else value


def attribute_value(value: Any) -> Any:
    """``value`` (a DynamoDB ``AttributeValue`` dict) as moto's JSON serializer writes it, or ``NotImplemented``
    when it holds something only the generic serializer handles (binary values, keys that are not members)."""
    if not isinstance(value, dict) or not value.keys() <= _FAST_MEMBERS:
        return NotImplemented
    out: dict[str, Any] = {}
    for member in _MEMBER_ORDER:
        item = value.get(member)
        if item is None:
            continue
        if member in _STRING_MEMBERS:
            out[member] = _as_string(item)
        elif member in _PASS_THROUGH_MEMBERS:
            out[member] = item
        elif member in _STRING_SET_MEMBERS:
            out[member] = [_as_string(v) for v in item]
        elif member == "M":
            mapped = {}
            for k, v in item.items():
                if v is None:
                    continue
                fast = attribute_value(v)
                if fast is NotImplemented:
                    return NotImplemented
                mapped[k] = fast
            out[member] = mapped
        else:  # L
            listed = []
            for v in item:
                fast = attribute_value(v)
                if fast is NotImplemented:
                    return NotImplemented
                listed.append(fast)
            out[member] = listed
    return out


def _dynamodb_attribute_values_fast() -> None:
    from moto.core.serialize import BaseJSONSerializer

    original = BaseJSONSerializer._serialize_type_structure
    if getattr(original, "_instantstart_patched", False):
        return

    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if shape.name == "AttributeValue" and key and not _transformed(self):
            fast = attribute_value(value)
            if fast is not NotImplemented:
                self._default_serialize(serialized, fast, shape, key)
                return
        original(self, serialized, value, shape, key)

    _serialize_type_structure._instantstart_patched = True  # type: ignore[attr-defined]
    BaseJSONSerializer._serialize_type_structure = _serialize_type_structure  # type: ignore[method-assign]


def _transformed(serializer: Any) -> bool:
    """Whether a response transformer could apply to an attribute value's members (then: the generic path)."""
    transformers = getattr(serializer._value_picker, "response_transformers", None) or {}
    return any(path.rsplit(".", 1)[-1] in _MEMBER_ORDER for path in transformers)


def _class_shape(clazz: type) -> tuple[tuple[str, ...], ...]:
    """The attribute names of each class of ``clazz``'s MRO: changes when one gains or loses an attribute."""
    return tuple(tuple(vars(c)) for c in clazz.__mro__)


def _action_method_names_are_kept() -> None:
    from moto.core import responses as responses_module
    from moto.core import utils

    responses: Any = responses_module
    if getattr(responses.method_names_from_class, "_instantstart_patched", False):
        return
    compute = utils.method_names_from_class
    kept: dict[type, tuple[tuple[tuple[str, ...], ...], list[str]]] = {}

    def method_names_from_class(clazz: Any) -> list[str]:
        shape = _class_shape(clazz)
        found = kept.get(clazz)
        if found is None or found[0] != shape:
            found = (shape, compute(clazz))
            kept[clazz] = found
        return list(found[1])

    method_names_from_class._instantstart_patched = True  # type: ignore[attr-defined]
    responses.method_names_from_class = method_names_from_class


def _update_expression_traversals_list_their_node_types_once() -> None:
    from moto.dynamodb.parsing import ast_nodes as ast_nodes_module

    ast_nodes: Any = ast_nodes_module  # moto's parsing package has no type information
    traverser = ast_nodes.DepthFirstTraverser
    if getattr(traverser.traverse_node_recursively, "_instantstart_patched", False):
        return
    node_class = ast_nodes.Node
    descend_into = (ast_nodes.Expression, ast_nodes.UpdateExpressionFunction)
    # moto's node classes are ABCs that nobody registers virtual subclasses with: whether a node is of a kind depends
    # on its concrete class only, so each answer is kept per class (an ABC isinstance costs a Python-level call)
    is_node: dict[type, bool] = {}
    processes: dict[tuple[type, type], bool] = {}
    descends: dict[type, bool] = {}

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        """moto's depth-first traversal, with "is it a node, does this traverser process it" answered once per class
        (moto rebuilt its processing map, a dict of bound methods, and ran ABC ``isinstance`` checks at every node)."""
        kind = type(node)
        node_kind = is_node.get(kind)
        if node_kind is None:
            node_kind = is_node[kind] = isinstance(node, node_class)
        if not node_kind:
            return node
        parent_node = node.parent
        if node.children is not None:
            for i, child_node in enumerate(node.children):
                self.pre_processing_of_child(node, i)
                self.traverse_node_recursively(child_node, i)
        key = (type(self), kind)
        processed = processes.get(key)
        if processed is None:
            processed = processes[key] = isinstance(node, self.nodes_to_be_processed())
        if processed:
            node = self.process(node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    def find_clauses(self: Any, clause_types: Any) -> list[Any]:
        """moto's ``Node.find_clauses``, with "does the search descend into it" answered once per class."""
        clauses = []
        for child in self.children or []:
            kind = type(child)
            if kind in clause_types:
                clauses.append(child)
                continue
            descend = descends.get(kind)
            if descend is None:
                descend = descends[kind] = isinstance(child, descend_into)
            if descend:
                clauses.extend(child.find_clauses(clause_types))
        return clauses

    traverse_node_recursively._instantstart_patched = True  # type: ignore[attr-defined]
    traverser.traverse_node_recursively = traverse_node_recursively
    node_class.find_clauses = find_clauses


def _update_expressions_are_parsed_once() -> None:
    from moto.dynamodb.parsing import expressions as expressions_module

    expressions: Any = expressions_module  # moto's parsing package has no type information
    parser: Any = expressions.UpdateExpressionParser
    if getattr(parser.make, "_instantstart_patched", False):
        return
    make = parser.make  # bound to the class
    kept = functools.lru_cache(maxsize=1024)(make)

    def cached_make(cls: Any, expression_str: str) -> Any:
        return kept(expression_str)

    cached_make._instantstart_patched = True  # type: ignore[attr-defined]
    parser.make = classmethod(cached_make)


def _aws_managed_policies_only_in_the_aws_partition() -> None:
    from moto.iam.models import IAMBackend

    original = IAMBackend._init_aws_policies
    if getattr(original, "_instantstart_patched", False):
        return

    def _init_aws_policies(self: Any) -> Any:
        return original(self) if self.region_name == "aws" else []

    _init_aws_policies._instantstart_patched = True  # type: ignore[attr-defined]
    IAMBackend._init_aws_policies = _init_aws_policies  # type: ignore[method-assign]


_TRANSACTION = threading.local()
"""The keys the transaction being applied names, by table (``keys``), for :func:`_table_backup`."""


def _table_backup(value: Any, memo: Any = None) -> Any:
    """``copy.deepcopy`` as moto's DynamoDB models call it, but a table becomes a backup of what the current
    transaction can change: a new item index that shares the untouched items, with deep copies of the named ones (a
    table whose keys are unknown is deep-copied whole)."""
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    keys = getattr(_TRANSACTION, "keys", {}).get(getattr(value, "name", None))
    if not isinstance(value, Table) or keys is None:
        return copy.deepcopy(value, memo)
    table: Any = value
    backup = copy.copy(table)
    if table.has_range_key:
        backup.items = defaultdict(dict, {h: dict(ranges) for h, ranges in table.items.items()})
    else:
        backup.items = defaultdict(dict, table.items)
    for key in keys:
        hash_key = DynamoType(key[table.hash_key_attr])
        range_key = DynamoType(key[table.range_key_attr]) if table.has_range_key else None
        item = table.get_item(hash_key, range_key)
        if item is None:
            continue
        if range_key is not None:
            backup.items[hash_key][range_key] = copy.deepcopy(item)
        else:
            backup.items[hash_key] = copy.deepcopy(item)
    return backup


def _transaction_keys(tables: dict[str, Any], transact_items: list[dict[str, Any]]) -> dict[str, list[Any] | None]:
    """The key of each item ``transact_items`` names, by table name; ``None`` for a table where one is not found."""
    keys: dict[str, list[Any] | None] = {}
    for entry in transact_items:
        _, op = next(iter(entry.items()))
        name = op.get("TableName") if isinstance(op, dict) else None
        if name not in tables:
            continue
        table = tables[name]
        attrs = [a for a in (table.hash_key_attr, table.range_key_attr) if a]
        key = op.get("Key") if "Key" in op else {a: op.get("Item", {}).get(a) for a in attrs}
        named = keys.setdefault(name, [])
        if named is None or not isinstance(key, dict) or any(not isinstance(key.get(a), dict) for a in attrs):
            keys[name] = None
        else:
            named.append(key)
    return keys


def _transactions_back_up_only_their_items() -> None:
    from moto.dynamodb import models

    dynamodb_models: Any = models  # the module whose ``copy`` the backup goes through
    backend: Any = dynamodb_models.DynamoDBBackend
    if getattr(backend, "_instantstart_item_backups", False):
        return
    original = backend.transact_write_items

    class _Copy:  # moto's module calls copy.deepcopy(table) for the backup and copy.deepcopy(item) elsewhere
        deepcopy = staticmethod(_table_backup)
        copy = staticmethod(copy.copy)

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        try:
            _TRANSACTION.keys = _transaction_keys(self.tables, transact_items)
        except Exception:  # noqa: BLE001 - a malformed request: moto's own path answers it (whole-table backups)
            _TRANSACTION.keys = {}
        try:
            return original(self, transact_items)
        finally:
            _TRANSACTION.keys = {}

    dynamodb_models.copy = _Copy
    backend.transact_write_items = functools.wraps(original)(transact_write_items)
    backend._instantstart_item_backups = True


def _updates_snapshot_the_old_item_once() -> None:
    from moto.dynamodb import responses as responses_module
    from moto.dynamodb.models.dynamo_type import Item

    dynamodb_responses: Any = responses_module  # the module whose ``copy`` UpdateItem's old-item copy goes through
    if getattr(dynamodb_responses.copy, "_instantstart_patched", False):
        return

    def deepcopy(value: Any, memo: Any = None) -> Any:
        # UpdateItem deep-copies the stored item, then reads only its to_json(), taken before the update: to_json()
        # is itself a snapshot (scalars are immutable, maps, lists and sets are copied), so the item is read as it is
        if isinstance(value, Item) or value is None:
            return value
        return copy.deepcopy(value, memo)

    class _Copy:  # moto's DynamoDB responses module calls copy.deepcopy once: the old item of UpdateItem
        copy = staticmethod(copy.copy)
        _instantstart_patched = True

    _Copy.deepcopy = staticmethod(deepcopy)  # type: ignore[attr-defined]
    dynamodb_responses.copy = _Copy


def _ec2_tags_are_read_by_resource_id() -> None:
    from moto.ec2.models.core import TaggedEC2Resource
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    resource: Any = TaggedEC2Resource
    if getattr(resource.get_tags, "_instantstart_patched", False):
        return

    def get_tags(self: Any) -> list[dict[str, str]]:
        """``describe_tags(filters={"resource-id": [self.id]})``: this resource's entries, in insertion order."""
        if not self.id:
            return []
        tags = dict(self.ec2_backend.tags.get(self.id, {}))
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(self.id), "")
        return [{"resource_id": self.id, "key": k, "value": v, "resource_type": kind} for k, v in tags.items()]

    get_tags._instantstart_patched = True  # type: ignore[attr-defined]
    resource.get_tags = get_tags


def _moto_modules_are_listed_once() -> None:
    from moto import backends

    module: Any = backends
    if getattr(module.list_of_moto_modules, "_instantstart_patched", False):
        return
    modules = tuple(module.list_of_moto_modules())

    def list_of_moto_modules() -> tuple[str, ...]:
        return modules

    list_of_moto_modules._instantstart_patched = True  # type: ignore[attr-defined]
    module.list_of_moto_modules = list_of_moto_modules
