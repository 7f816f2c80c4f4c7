/// Firebase's rules for custom claims, which the trigger and the identity service's Admin API
/// both apply.
public enum CustomClaims {
    /// Names a custom claim may not use.
    public static let reserved: Set<String> = [
        "acr", "amr", "at_hash", "aud", "auth_time", "azp", "cnf", "c_hash", "exp", "iat", "iss", "jti",
        "nbf", "nonce", "sub", "firebase",
    ]
    /// The most bytes the claims may take serialized.
    public static let maxBytes = 1000
}
