"""Drives the operations explorer in a real headless Chromium, as a person would.

Usage: drive.py BASE_URL SCREENSHOT_DIR

Loads BASE_URL/explorer, calls a query through the generated form, sees a validation error
next to the right field (checked in the page, and answered by the server), fills a nested
form with an array, an enum, a number range, a boolean and defaults, calls an operation
that needs a token, streams a subscription to its end, and stops one half-way. Takes a
screenshot after each step. Exits non-zero (with the reason) on the first thing that is not
as expected.
"""

import os
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE, SHOTS = sys.argv[1], sys.argv[2]
os.makedirs(SHOTS, exist_ok=True)


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--window-size=1280,900", "--hide-scrollbars",
        f"--user-data-dir={tempfile.mkdtemp(prefix='opkit-explorer-')}",
    ]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


driver = browser()
# The page replaces #result's children when an answer arrives, so an element found a moment
# before may be gone by the time it is read: a wait reads again rather than failing.
wait = WebDriverWait(driver, 20, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))
step = 0


def shot(name):
    global step
    step += 1
    driver.save_screenshot(os.path.join(SHOTS, f"{step:02d}-{name}.png"))


def css(selector):
    return driver.find_element(By.CSS_SELECTOR, selector)


def field(path):
    return css(f'[data-path="{path}"]:is(input, select, textarea)')


def error_at(path):
    return css(f'.field-error[data-path="{path}"]').text


def open_op(op_id):
    css(f'nav button.op[data-op="{op_id}"]').click()
    wait.until(lambda d: css("#op-id").text == op_id)


def expect(condition, what):
    if not condition:
        shot("failure")
        raise SystemExit(f"not as expected: {what}")


try:
    driver.get(f"{BASE}/explorer")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    namespaces = [s.get_attribute("data-namespace") for s in driver.find_elements(By.CSS_SELECTOR, "nav section")]
    expect(namespaces == ["admin", "clock", "math", "shop"], f"operations grouped by namespace: {namespaces}")
    expect(css("#openapi-link").get_attribute("href").endswith("/openapi.json"), "the OpenAPI document is linked")
    expect(css("#mcp-link").get_attribute("href").endswith("/mcp"), "the MCP endpoint is linked")
    shot("loaded")

    # A query through its form: the whole envelope comes back.
    open_op("math.add")
    field("/a").send_keys("2")
    field("/b").send_keys("40")
    css("#call").click()
    wait.until(EC.presence_of_element_located((By.ID, "data")))
    expect(css("#data").text == "42", f"math.add gives 42, got {css('#data').text!r}")
    expect(css("#request-id").text not in ("", "?"), "the request id is shown")
    expect("math.add" in css("#meta").text, f"the meta table shows the operation: {css('#meta').text}")
    shot("query-result")

    # A validation error next to its field, found in the page before sending ...
    open_op("shop.order")
    field("/customer").send_keys("Ada")
    field("/quantity").send_keys("50")
    field("/address/street").send_keys("1 Main St")
    field("/address/city").send_keys("Springfield")
    css("#call").click()
    wait.until(lambda d: error_at("/quantity") != "")
    expect("at most 10" in error_at("/quantity"), f"quantity's error: {error_at('/quantity')!r}")
    expect(error_at("/customer") == "", "no error next to a valid field")
    shot("validation-in-page")
    # ... and the same answered by the server when the page does not check first.
    css("#precheck").click()
    css("#call").click()
    # The page's own check left VALIDATION_ERROR in #result ("HTTP not sent"), so wait for the
    # server's status line, not the code both answers share.
    wait.until(lambda d: "HTTP 400" in css("#result h3").text)
    expect("VALIDATION_ERROR" in css("#result").text, f"the server's code: {css('#result').text}")
    expect("HTTP 400" in css("#result h3").text, f"the server answered 400: {css('#result h3').text}")
    expect(error_at("/quantity") != "", "the server's violation is next to quantity")
    shot("validation-from-server")
    css("#precheck").click()

    # The nested form: enum, boolean, array, defaults.
    field("/quantity").clear()
    field("/quantity").send_keys("3")
    Select(field("/size")).select_by_visible_text("large")
    expect(field("/note").get_attribute("value") == "no note", "a default is filled in")
    css('[data-add="/toppings"]').click()
    css('[data-add="/toppings"]').click()
    field("/toppings/0").send_keys("olives")
    field("/toppings/1").send_keys("basil")
    Select(field("/gift")).select_by_visible_text("true")
    css("#call").click()
    wait.until(EC.presence_of_element_located((By.ID, "data")))
    data = css("#data").text
    for piece in ['"large"', '"olives"', '"basil"', '"gift": true', '"Springfield"', '"quantity": 3']:
        expect(piece in data, f"the order echoes {piece}: {data}")
    shot("nested-form")

    # Raw JSON mode checks as it is typed.
    css("#mode-raw").click()
    raw = css("#raw")
    raw.clear()
    raw.send_keys('{"customer": 7}')
    wait.until(lambda d: "expected string" in css("#raw-errors").text)
    shot("raw-json")

    # Access: without a token the call is refused, with one it runs.
    open_op("admin.secret")
    expect("admin" in css("#access").text, f"the access rule is shown: {css('#access').text}")
    css("#call").click()
    wait.until(lambda d: "HTTP 401" in css("#result").text)
    css("#auth-value").send_keys("admin-token")
    css("#call").click()
    wait.until(EC.presence_of_element_located((By.ID, "data")))
    expect(css("#data").text == '"the secret"', f"admin.secret with a token: {css('#data').text}")
    shot("with-token")
    # The token lives in this tab's session only: never in localStorage, which outlives the
    # tab and every other tab of the origin reads.
    kept = driver.execute_script("return [localStorage.getItem('opkit-explorer-auth'), sessionStorage.getItem('opkit-explorer-auth')]")
    expect(kept[0] is None, f"the token is not in localStorage: {kept[0]}")
    expect(kept[1] is not None and "admin-token" in kept[1], f"the token is in sessionStorage: {kept[1]}")

    # A subscription, streamed item by item until it completes ...
    open_op("clock.ticks")
    field("/count").send_keys("3")
    field("/every_ms").send_keys("50")
    css("#call").click()
    wait.until(lambda d: "completed" in css("#stream-state").text)
    items = driver.find_elements(By.CSS_SELECTOR, "#items .item pre")
    expect([i.text for i in items] == ["0", "1", "2"], f"three ticks: {[i.text for i in items]}")
    shot("subscription-complete")

    # ... and one stopped half-way.
    field("/count").clear()
    field("/count").send_keys("1000")
    field("/every_ms").clear()
    field("/every_ms").send_keys("100")
    css("#call").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#items .item")) >= 2)
    css("#stop").click()
    wait.until(lambda d: "stopped" in css("#stream-state").text)
    shot("subscription-stopped")
    print(f"explorer: {step} steps passed; screenshots in {SHOTS}")
finally:
    driver.quit()
