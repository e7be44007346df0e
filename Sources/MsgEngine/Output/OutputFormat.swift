import MsgKit

/// How a listing is written (`--format`).
public enum OutputFormat: String, Sendable, CaseIterable {
    case ndjson, json, csv, table
}
