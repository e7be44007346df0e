/// The version of msg and of the plugins shipped with it.
public enum MsgVersion {
    /// `major.minor.patch`.
    public static let current = "0.1.0"
}
