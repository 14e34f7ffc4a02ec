// Package olm checks the OLM bundle and file-based catalog: console descriptors cover every spec field,
// alm-examples are valid objects for the bundled CRDs on a real API server, the catalog's upgrade graph
// is sound, and an upgrade from the previous catalog version keeps the ISO ejection recovery record.
package olm
