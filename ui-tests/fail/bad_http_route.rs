use opkit::prelude::*;

#[operation(namespace = "todos", http(method = "FETCH", path = "/todos"))]
async fn fetch() -> u32 {
    1
}

#[operation(namespace = "todos", http(method = "GET", path = "todos/{id}"))]
async fn relative(id: String) -> String {
    id
}

#[operation(namespace = "todos", http(method = "GET", path = "/todos/{id}.json"))]
async fn partial(id: String) -> String {
    id
}

#[operation(namespace = "todos", mutation, http(method = "POST", path = "/todos", status = 404))]
async fn failing() -> u32 {
    1
}

#[operation(namespace = "todos", http(path = "/todos"))]
async fn no_method() -> u32 {
    1
}

#[operation(namespace = "todos", mutation, http(method = "PUT", path = "/kv", body_limit = "5 parsecs", body = "xml"))]
async fn put() -> u32 {
    1
}

fn main() {}
