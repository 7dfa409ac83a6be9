//! One call of each HTTP side, its response printed (a look at what each side sends).
use opkit::OperationRegistry;
use opkit_adapters::http_server::HttpServer;
use opkit_benches::*;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        HttpServer::new(OperationRegistry::from_inventory())
            .serve(listener)
            .await
            .unwrap()
    });
    let client = reqwest::Client::new();
    for (path, body) in [("/ops/bench.medium", medium_json()), ("/ops/bench.add", tiny_json())] {
        let response = client
            .post(format!("http://{address}{path}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        println!("{:?} {:#?}", response.status(), response.headers());
        let bytes = response.bytes().await.unwrap();
        println!("{} bytes: {}", bytes.len(), String::from_utf8_lossy(&bytes));
        println!("request {} bytes", serde_json::to_vec(&body).unwrap().len());
    }
}
