//! Integration tests for tern-static: the handler called directly over real
//! temporary directories.
