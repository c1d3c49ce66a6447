"""The languages the code graph reads: which files are whose (by extension), the grammar each is parsed with, and the
tree-sitter query that finds its symbols and edges.

Grammars come from the tree-sitter project's own wheels (``tree-sitter-python``, ``tree-sitter-go``...), which ship
each grammar compiled: nothing is built or downloaded at run time. A grammar is named here as ``module:function``
and resolved by the parsing worker the first time it meets a file of that language (``hangar.codegraph.worker``).

The query's capture names are the extraction's vocabulary (``hangar.codegraph.extract``): ``def.<kind>`` marks a
definition whose name is the ``name`` capture of the same match (``container.<kind>``: a block that names the
container of what it holds but is no symbol itself, a Rust ``impl``); ``call``, ``import`` and ``inherit`` mark the
target of an edge from the innermost definition around it; ``ref`` marks any other identifier (a reference edge).

This module is imported by the worker, so it imports nothing of the server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    grammar: str  # "module:function" returning the language pointer
    extensions: tuple[str, ...]
    query: str


_PYTHON = """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.variable))
(class_definition superclasses: (argument_list [(identifier) @inherit (attribute attribute: (identifier) @inherit)]))
(call function: [(identifier) @call (attribute attribute: (identifier) @call)])
(import_statement name: [(dotted_name) @import (aliased_import name: (dotted_name) @import)])
(import_from_statement module_name: [(dotted_name) (relative_import)] @import)
(identifier) @ref
"""

_JS_COMMON = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: (property_identifier) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
(call_expression function: [(identifier) @call (member_expression property: (property_identifier) @call)])
(new_expression constructor: (identifier) @call)
(import_statement source: (string (string_fragment) @import))
(identifier) @ref
"""

_JAVASCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (identifier) @name) @def.class
(class_heritage (identifier) @inherit)
"""
)

_TYPESCRIPT = (
    _JS_COMMON
    + """
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(extends_clause value: (identifier) @inherit)
(implements_clause (type_identifier) @inherit)
(extends_type_clause type: (type_identifier) @inherit)
(type_identifier) @ref
"""
)

_GO = """
(function_declaration name: (identifier) @name) @def.function
(method_declaration name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (map_type) (slice_type)
  (function_type) (pointer_type) (array_type) (channel_type) (generic_type)]) @def.type
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))
(struct_type (field_declaration_list (field_declaration !name type: (type_identifier) @inherit)))
(interface_type (type_elem (type_identifier) @inherit))
(call_expression function: [(identifier) @call (selector_expression field: (field_identifier) @call)])
(import_spec path: (interpreted_string_literal) @import)
(identifier) @ref
(type_identifier) @ref
"""

_RUST = """
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(mod_item name: (identifier) @name) @def.module
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.variable
(macro_definition name: (identifier) @name) @def.macro
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name)]) @container.impl
(impl_item trait: [(type_identifier) @inherit (generic_type type: (type_identifier) @inherit)])
(call_expression function: [(identifier) @call (field_expression field: (field_identifier) @call)
  (scoped_identifier name: (identifier) @call)])
(macro_invocation macro: (identifier) @call)
(use_declaration argument: (_) @import)
(identifier) @ref
(type_identifier) @ref
"""

_JAVA = """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.constructor
(superclass (type_identifier) @inherit)
(super_interfaces (type_list (type_identifier) @inherit))
(extends_interfaces (type_list (type_identifier) @inherit))
(method_invocation name: (identifier) @call)
(object_creation_expression type: (type_identifier) @call)
(import_declaration (scoped_identifier) @import)
(identifier) @ref
(type_identifier) @ref
"""

_C = """
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  @def.function
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @def.struct
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
(preproc_function_def name: (identifier) @name) @def.macro
(preproc_def name: (identifier) @name) @def.macro
(call_expression function: (identifier) @call)
(preproc_include path: [(string_literal (string_content) @import) (system_lib_string) @import])
(identifier) @ref
(type_identifier) @ref
"""

LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec("python", "tree_sitter_python:language", (".py", ".pyi"), _PYTHON),
        LanguageSpec("javascript", "tree_sitter_javascript:language", (".js", ".mjs", ".cjs", ".jsx"), _JAVASCRIPT),
        LanguageSpec("typescript", "tree_sitter_typescript:language_typescript", (".ts", ".mts", ".cts"), _TYPESCRIPT),
        LanguageSpec("tsx", "tree_sitter_typescript:language_tsx", (".tsx",), _TYPESCRIPT),
        LanguageSpec("go", "tree_sitter_go:language", (".go",), _GO),
        LanguageSpec("rust", "tree_sitter_rust:language", (".rs",), _RUST),
        LanguageSpec("java", "tree_sitter_java:language", (".java",), _JAVA),
        LanguageSpec("c", "tree_sitter_c:language", (".c", ".h"), _C),
    )
}
_BY_EXTENSION = {ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions}


def language_of(path: str) -> str | None:
    """The language a repository file is read as, by its extension; None for files the graph does not read."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return None if dot <= 0 else _BY_EXTENSION.get(name[dot:].lower())
