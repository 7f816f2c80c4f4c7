"""The console in a real browser (Chromium, headless) while a small app loop uses the server:
a new user appears with its claims and a fare contract appears and its reservation goes, all
without reloading; the order's trace; a user disabled from the console gets 401 on its next ticket
request. Then, on `faresync console` over a replayed store (DEMO_URL), a park-timeout dead letter whose
account exists by now is re-driven and its fare contract appears. Every page is saved as a PNG under OUT and checked with
axe-core (no serious or critical violation).

Usage: python3 console_browser.py BASE_URL DEMO_URL OUT
"""
import base64
import json
import os
import sys

import requests
from axe_selenium_python import Axe
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

base, demo, out = sys.argv[1], sys.argv[2], sys.argv[3]
IDENTITY = f"{base}/identitytoolkit.googleapis.com/v1"
PRODUCT = "ATB:PreassignedFareProduct:8808c360"
os.makedirs(out, exist_ok=True)
failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def browser():
    os.environ["SE_AVOID_STATS"] = "true"
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait(driver, condition, what, seconds=20):
    try:
        # A live part swapped in while the condition reads it leaves a stale element, and a page that
        # is navigating (a form's redirect) can answer a read with another driver error: read again
        # until the condition holds or the time is up.
        WebDriverWait(driver, seconds, poll_frequency=0.2, ignored_exceptions=[WebDriverException]).until(lambda d: condition(d))
        check(True, what)
        return True
    except Exception as error:
        check(False, what)
        print(f"     waited {seconds} s: {type(error).__name__} {str(error).splitlines()[0] if str(error) else ''}", flush=True)
        return False


def live_text(driver):
    return driver.find_element(By.ID, "main").text


def mark(driver):
    """Marks the document, so that a reload (a new document) is seen: the mark would be gone."""
    driver.execute_script("window.consoleTestMark = 1")


def not_reloaded(driver):
    return driver.execute_script("return window.consoleTestMark === 1")


def stream_open(driver):
    """The page's stream is open and the live part fetched once since (it is not about to be replaced)."""
    return driver.execute_script(
        "return document.body.getAttribute('data-stream-state') === 'open'"
        " && (!document.getElementById('live') || Number(document.body.getAttribute('data-live-fetches')) >= 1)")


def save(driver, name):
    path = os.path.join(out, f"{name}.png")
    driver.save_screenshot(path)
    axe = Axe(driver)
    axe.inject()
    results = axe.run()
    bad = [v for v in results["violations"] if v.get("impact") in ("serious", "critical")]
    for violation in bad:
        print(f"     axe {violation['impact']}: {violation['id']}: {violation['help']}", flush=True)
    check(not bad, f"axe: no serious or critical violation on {name}")


def sign_up(http):
    answer = http.post(f"{IDENTITY}/accounts:signUp?key=fake", json={"returnSecureToken": True})
    if answer.status_code != 200:
        raise SystemExit(f"sign-up answered {answer.status_code}: {answer.text}")
    session = answer.json()
    return session["localId"], session["idToken"], session["refreshToken"]


def claims_of(token):
    return json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "==="))


def token_with_claims(http, refresh_token):
    for _ in range(50):
        token = http.post(f"{base}/securetoken.googleapis.com/v1/token?key=fake",
                          data={"grant_type": "refresh_token", "refresh_token": refresh_token}).json()["id_token"]
        if "abt_id" in claims_of(token):
            return token
    raise SystemExit("the claims never appeared")


def reserve(http, token, key):
    auth = {"Authorization": f"Bearer {token}"}
    offers = http.post(f"{base}/ticket/v1/search", headers=auth, json={
        "products": [PRODUCT], "travellers": [{"id": "me", "userType": "ADULT", "count": 1}], "zones": ["ATB:TariffZone:1"]})
    offer = offers.json()["offers"][0]
    reserved = http.post(f"{base}/ticket/v1/reserve", headers={**auth, "Idempotency-Key": key},
                         json={"offers": [{"offerId": offer["offerId"], "count": 1}], "paymentType": 2})
    return reserved.json()


def pay(http, order):
    """Presses Pay on the terminal and follows it to the payment callback, as the app's web view does."""
    token = order["url"].split("t=")[1]
    pressed = http.post(f"{base}/ticket/v1/terminal/{order['orderId']}/pay?t={token}", allow_redirects=False)
    back = http.get(pressed.headers["Location"], allow_redirects=False)
    check(back.status_code == 302 and "CAPTURE" in back.headers.get("Location", ""), "the payment is captured")


def redrive_park_timeout(driver):
    """On the replayed store: a park-timeout dead letter whose account exists by now, re-driven from
    the keyboard; its fare contract appears."""
    driver.get(f"{demo}/console/dead-letters?reason=park-timeout")
    wait(driver, stream_open, "the dead letters page's stream is open")
    rows = driver.execute_script(
        "return [...document.querySelectorAll('table.dead-letters tbody tr')].map(r => [...r.cells].map(c => c.textContent))")
    check(len(rows) > 0, f"the replayed store lists park-timeout dead letters ({len(rows)})")
    save(driver, "dead-letters")
    chosen = None
    for cells in rows:
        letter, key = cells[1].strip(), cells[5].strip()
        if letter and key and f"/console/users/" in requests.get(f"{demo}/console/users", params={"q": key}).text:
            chosen = letter
            break
    check(chosen is not None, "a park-timeout dead letter's account exists by now")
    if chosen is None:
        return
    driver.find_element(By.ID, f"redrive-{chosen}").send_keys(Keys.ENTER)
    wait(driver, lambda d: f"{chosen}: applied" in d.find_element(By.ID, "main").text, "the re-driven dead letter is applied")
    check(not driver.find_elements(By.ID, f"redrive-{chosen}"), "the re-driven dead letter leaves the list")
    driver.get(f"{demo}/console/trace?q=deadLetters/{chosen}")
    links = [a for a in driver.find_elements(By.CSS_SELECTOR, "ol.timeline a") if "/fareContracts/" in a.text]
    check(bool(links), "the re-drive's step wrote a fare contract")
    if links:
        links[-1].click()
        wait(driver, lambda d: "travelRights" in live_text(d) and "timestamp" in live_text(d), "the re-driven fare contract is in the store")


HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'
HOSTILE_UID = 'ct space %41 & <b data-hostile>"q"'


def unsigned(payload):
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none", "typ": "JWT"}) + "." + part(payload) + "."


def hostile_users(http):
    """A user whose display name and claims are markup, and one whose uid is (an unsigned custom token
    names any uid, as the Auth emulator allows)."""
    _, token, _ = sign_up(http)
    updated = http.post(f"{IDENTITY}/accounts:update?key=fake", json={"idToken": token, "displayName": HOSTILE})
    check(updated.status_code == 200, f"a display name of markup is taken ({updated.status_code})")
    signed_in = http.post(f"{IDENTITY}/accounts:signInWithCustomToken?key=fake", json={"returnSecureToken": True, "token": unsigned({
        "uid": HOSTILE_UID, "claims": {"note": HOSTILE},
        "aud": "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"})})
    check(signed_in.status_code == 200, f"a custom token names a uid with a space, a % and markup ({signed_in.status_code})")


def inert(driver):
    """Nothing a hostile value carried runs or lands in the page as markup."""
    return driver.execute_script(
        "return window.pwned === undefined && document.querySelectorAll('script:not([src=\"/console/assets/console.js\"]), img[onerror], [data-hostile]').length === 0")


def crawl(driver, limit=150):
    """Every console page reachable from the overview by its links, breadth first, at most `limit`."""
    queue, seen, bad = [f"{base}/console/"], set(), []
    while queue and len(seen) < limit:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        status = requests.get(url).status_code
        driver.get(url)
        if status != 200 or not inert(driver):
            bad.append(f"{url} ({status})")
        links = driver.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href.split('#')[0])")
        queue += [link for link in links if link.startswith(f"{base}/console/") and link not in seen]
    check(not bad, f"{len(seen)} console pages crawled, each 200 and inert" + (f"; not: {bad[:5]}" if bad else ""))
    return seen


def hostile_crawl(driver, http):
    hostile_users(http)
    driver.get(f"{base}/console/users")
    wait(driver, lambda d: "ct space %41" in live_text(d), "the hostile uid is listed")
    pages = crawl(driver)
    page = next((url for url in pages if "/console/users/ct%20space%20%2541" in url), None)
    check(page is not None, "the crawl reaches the hostile uid's page")
    if page is None:
        return
    driver.get(page)
    check(driver.find_element(By.TAG_NAME, "h1").text == f"User {HOSTILE_UID}", "the hostile uid's page shows its user")
    driver.find_element(By.ID, "toggle-disabled").send_keys(Keys.ENTER)
    wait(driver, lambda d: d.find_element(By.ID, "toggle-disabled").text == "Enable user", "the console disables the hostile uid's user")
    check(inert(driver), "the hostile uid's page stays inert after the action")
    save(driver, "hostile-user")


def main():
    http = requests.Session()
    driver = browser()
    try:
        # Users: a new user appears with its claims, without a reload.
        driver.get(f"{base}/console/users")
        wait(driver, stream_open, "the users page's stream is open")
        mark(driver)
        uid, _, refresh_token = sign_up(http)
        wait(driver, lambda d: uid in live_text(d) and "abt_id" in live_text(d), "a new user appears with its claims")
        check(not_reloaded(driver), "the users page did not reload")
        save(driver, "users")

        # The user's page: its reservation appears, then its fare contract, and the reservation goes.
        token = token_with_claims(http, refresh_token)
        driver.find_element(By.LINK_TEXT, uid).click()
        wait(driver, lambda d: d.find_element(By.TAG_NAME, "h1").text == f"User {uid}" and stream_open(d), "the user's page's stream is open")
        mark(driver)
        order = reserve(http, token, "console-1")
        wait(driver, lambda d: order["orderId"] in d.find_element(By.ID, "live").text, "the reservation appears on the user's page")
        pay(http, order)
        wait(driver, lambda d: "No open reservations." in live_text(d) and "No fare contracts." not in live_text(d),
             "the fare contract appears and the reservation goes")
        check(not_reloaded(driver), "the user's page did not reload")
        save(driver, "user")

        # The order's trace: search its id, read the steps.
        driver.get(f"{base}/console/trace")
        box = driver.find_element(By.ID, "q")
        box.send_keys(order["orderId"])
        box.send_keys(Keys.ENTER)
        wait(driver, lambda d: "ticketing.reservation.created" in live_text(d) and "abt.farecontract.changed" in live_text(d)
             and "ticketing.payment.updated" in live_text(d), "the order's trace shows its reservation, payment and fare contract")
        save(driver, "trace")

        # Disable the user from the keyboard, then its next ticket request gets 401.
        driver.get(f"{base}/console/users/{uid}")
        button = driver.find_element(By.ID, "toggle-disabled")
        button.send_keys(Keys.ENTER)
        if not wait(driver, lambda d: d.find_element(By.ID, "toggle-disabled").text == "Enable user", "the console disables the user"):
            print("     the page says: " + driver.find_element(By.TAG_NAME, "main").text[:300], flush=True)
        tickets = http.get(f"{base}/ticket/v1/reservations", headers={"Authorization": f"Bearer {token}"})
        check(tickets.status_code == 401, f"the disabled user's ticket request gets 401 (got {tickets.status_code})")

        # The overview, live: the counts move as the app loop adds users.
        driver.get(f"{base}/console/")
        wait(driver, stream_open, "the overview's stream is open")
        mark(driver)
        before = driver.find_element(By.CSS_SELECTOR, ".counts").text
        for _ in range(3):
            sign_up(http)
        wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".counts").text != before, "the overview's counts change live")
        check(not_reloaded(driver), "the overview did not reload")
        check(len(driver.find_elements(By.CSS_SELECTOR, "svg.chart")) == 1, "the overview draws its chart as SVG")
        save(driver, "overview")
        driver.set_window_size(390, 844)
        driver.save_screenshot(os.path.join(out, "overview-phone.png"))
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check(width <= 390, f"the overview fits a phone-sized window (scroll width {width})")
        driver.set_window_size(1280, 1000)

        # Documents: the customer's document, typed; a timestamp shows as a date.
        driver.get(f"{base}/console/documents?path=customers/{uid}")
        check("timestamp" in live_text(driver) and "customerNumber" in live_text(driver), "the customer document shows typed fields")
        save(driver, "documents")

        # The change feed: a live tail, paused and resumed.
        driver.get(f"{base}/console/feed")
        wait(driver, stream_open, "the change feed's stream is open")
        sign_up(http)
        wait(driver, lambda d: "authUsers/" in d.find_element(By.ID, "feed-rows").text, "the feed shows a new change")
        pause = driver.find_element(By.ID, "feed-pause")
        pause.send_keys(Keys.SPACE)
        rows = len(driver.find_elements(By.CSS_SELECTOR, "#feed-rows tr"))
        sign_up(http)
        wait(driver, lambda d: "wait until you resume" in d.find_element(By.ID, "feed-state").text
             and "new changes" in d.find_element(By.ID, "feed-state").text, "paused, the feed holds new changes back")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#feed-rows tr")) == rows, "paused, no row is added")
        pause.send_keys(Keys.SPACE)
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#feed-rows tr")) > rows, "resumed, the held changes show")
        save(driver, "feed")

        redrive_park_timeout(driver)
        hostile_crawl(driver, http)
    finally:
        driver.quit()
    if failures:
        raise SystemExit(f"{len(failures)} console checks failed: {failures}")
    print("console: every browser check passed")


main()
