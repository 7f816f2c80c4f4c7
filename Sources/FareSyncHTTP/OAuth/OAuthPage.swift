import HTTPTypes

/// The OAuth provider's login page and its error page: small HTML that loads nothing and runs no
/// script, may not be framed, and is not cached. Every value written into it is escaped. The
/// policy sets no `form-action`: browsers apply it to the redirect that follows the login, which
/// goes to the app's own redirect URI.
enum OAuthPage {
    static let headers: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        .xFrameOptions: "DENY",
        .referrerPolicy: "no-referrer",
        .cacheControl: "no-store",
    ]

    /// The login form, carrying the authorization request on in hidden fields.
    static func login(_ fields: [String: String]) -> String {
        let names = ["client_id", "redirect_uri", "response_type", "code_challenge", "code_challenge_method", "state"]
        let hidden = names.compactMap { name in
            fields[name].map { #"<input type="hidden" name="\#(name)" value="\#(escape($0))">"# }
        }.joined()
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>Log in (simulated account provider)</title></head>
            <body><h1>Log in</h1><p>Any username with a password is an account here.</p>
            <form method="post" action="/oauth/authorize">\(hidden)
            <label>Username <input name="username" autocomplete="username"></label>
            <label>Password <input name="password" type="password" autocomplete="current-password"></label>
            <button type="submit">Log in</button></form></body></html>
            """
    }

    static func error(_ description: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Login error</title></head>
        <body><h1>This login request cannot be served</h1><p>\(escape(description))</p></body></html>
        """
    }

    static func escape(_ text: String) -> String { HTMLText.escape(text) }
}
